package statetest

import (
	"errors"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

var (
	claimant = state.ClaimOwner{Instance: "pod-1", Incarnation: "aaaa"}
	other    = state.ClaimOwner{Instance: "pod-2", Incarnation: "bbbb"}
)

func testClaims(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	key := "ce:/lensfn/simulation-api:1a2b3c4d/queued"
	c, err := s.Claim(ctx, key, claimant, time.Minute)
	if err != nil || c.State != state.ClaimNew {
		t.Fatalf("first claim %+v, %v", c, err)
	}
	if c, _ := s.Claim(ctx, key, claimant, time.Minute); c.State != state.ClaimPending {
		t.Errorf("second claim by the same process %v, want pending", c.State)
	}
	if c, _ := s.Claim(ctx, key, other, time.Minute); c.State != state.ClaimPending || c.Holder != "pod-1" {
		t.Errorf("claim by another instance %+v, want pending held by pod-1", c)
	}
	if err := s.AbandonClaim(ctx, key, other); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, key, other, time.Minute); c.State != state.ClaimPending {
		t.Errorf("another owner abandoned pod-1's claim: %v", c.State)
	}
	if err := s.AbandonClaim(ctx, key, claimant); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, key, claimant, time.Minute); c.State != state.ClaimNew {
		t.Errorf("claim after abandon %v, want new", c.State)
	}
	if err := s.CompleteClaim(ctx, key, "reply-id:42", time.Hour); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Claim(ctx, key, other, time.Minute)
	if c.State != state.ClaimDone || c.Result != "reply-id:42" {
		t.Errorf("claim after completion %+v", c)
	}
	if err := s.AbandonClaim(ctx, key, claimant); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, key, claimant, time.Minute); c.State != state.ClaimDone {
		t.Errorf("abandon removed a done claim: %v", c.State)
	}
	if err := s.RenewClaim(ctx, key, claimant, time.Minute); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("renewing a done claim: %v, want ErrNotFound", err)
	}
	if err := s.CompleteClaim(ctx, "other", "", time.Hour); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, "other", claimant, time.Minute); c.State != state.ClaimDone || c.Result != "" {
		t.Errorf("empty result claim %+v", c)
	}
	_, err = s.Claim(ctx, "x", state.ClaimOwner{Instance: "pod-1"}, time.Minute)
	wantErr(t, "claim without an incarnation", err, state.ErrInvalid)
}

// testClaimTakeover: a pending claim left by an earlier incarnation of the same instance (the
// process crashed and was restarted) is taken over at once; another instance's is not.
func testClaimTakeover(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	if c, _ := s.Claim(ctx, "crashed", claimant, time.Hour); c.State != state.ClaimNew {
		t.Fatalf("first claim %v", c.State)
	}
	restarted := state.ClaimOwner{Instance: claimant.Instance, Incarnation: "cccc"}
	if c, _ := s.Claim(ctx, "crashed", other, time.Minute); c.State != state.ClaimPending {
		t.Fatalf("another instance took over a live claim: %v", c.State)
	}
	if c, _ := s.Claim(ctx, "crashed", restarted, time.Minute); c.State != state.ClaimNew {
		t.Fatalf("the restarted instance found its dead incarnation's claim %v, want new", c.State)
	}
	if err := s.RenewClaim(ctx, "crashed", claimant, time.Minute); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("the dead incarnation renewed a claim taken over: %v", err)
	}
	if err := s.RenewClaim(ctx, "crashed", restarted, time.Minute); err != nil {
		t.Errorf("renew by the new holder: %v", err)
	}
}

// testClaimExpiry: a pending claim that is not renewed expires; one renewed outlives its TTL.
func testClaimExpiry(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	if c, _ := s.Claim(ctx, "crash", other, 150*time.Millisecond); c.State != state.ClaimNew {
		t.Fatalf("first claim %v", c.State)
	}
	// "kept" is renewed every 100 ms for 800 ms, past its 600 ms TTL: it expires only if one
	// renewal comes 600 ms late (a host that stalls the test that long), where a 300 ms TTL
	// failed under load.
	const keptTTL = 600 * time.Millisecond
	if c, _ := s.Claim(ctx, "kept", other, keptTTL); c.State != state.ClaimNew {
		t.Fatalf("first claim %v", c.State)
	}
	if err := s.CompleteClaim(ctx, "done", "r", 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		time.Sleep(100 * time.Millisecond)
		if err := s.RenewClaim(ctx, "kept", other, keptTTL); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := s.Claim(ctx, "crash", claimant, time.Minute); c.State != state.ClaimNew {
		t.Errorf("claim after the pending attempt expired: %v, want new", c.State)
	}
	if c, _ := s.Claim(ctx, "done", claimant, time.Minute); c.State != state.ClaimNew {
		t.Errorf("claim after the done record expired: %v, want new", c.State)
	}
	if c, _ := s.Claim(ctx, "kept", claimant, time.Minute); c.State != state.ClaimPending {
		t.Errorf("a renewed claim expired: %v", c.State)
	}
}
