package statetest

import (
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

func testLeases(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	a, err := s.AcquireLease(ctx, "task:1", "pod-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a.Token <= 0 || a.Owner != "pod-a" || a.Name != "task:1" || time.Until(a.ExpiresAt) < 50*time.Second {
		t.Errorf("lease %+v", a)
	}
	_, err = s.AcquireLease(ctx, "task:1", "pod-b", time.Minute)
	wantErr(t, "second owner", err, state.ErrLeaseHeld)
	again, err := s.AcquireLease(ctx, "task:1", "pod-a", time.Minute)
	if err != nil || again.Token != a.Token {
		t.Errorf("re-acquire by the holder: %+v, %v (want same token %d)", again, err, a.Token)
	}
	h, err := s.LeaseHolder(ctx, "task:1")
	if err != nil || h.Owner != "pod-a" || h.Token != a.Token || time.Until(h.ExpiresAt) <= 0 {
		t.Errorf("holder %+v, %v", h, err)
	}
	if _, err := s.RenewLease(ctx, a, 2*time.Minute); err != nil {
		t.Errorf("renew by holder: %v", err)
	}
	impostor := a
	impostor.Owner = "pod-b"
	_, err = s.RenewLease(ctx, impostor, time.Minute)
	wantErr(t, "renew by non-holder", err, state.ErrLeaseLost)
	wantErr(t, "release by non-holder", s.ReleaseLease(ctx, impostor), state.ErrLeaseLost)
	if err := s.ReleaseLease(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err = s.LeaseHolder(ctx, "task:1")
	wantErr(t, "holder after release", err, state.ErrNotFound)
	wantErr(t, "release twice", s.ReleaseLease(ctx, a), state.ErrLeaseLost)
	b, err := s.AcquireLease(ctx, "task:1", "pod-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token <= a.Token {
		t.Errorf("fencing token did not grow: %d then %d", a.Token, b.Token)
	}
	// Leases are independent by name.
	if _, err := s.AcquireLease(ctx, "task:2", "pod-a", time.Minute); err != nil {
		t.Errorf("other lease: %v", err)
	}
}

func testLeaseExpiryAndFencing(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	mustCreate(t, s, state.Record{Kind: kind, ID: "f", Status: "queued"})
	a, err := s.AcquireLease(ctx, "task:f", "pod-a", 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	r, err := state.Transition(ctx, s, kind, "f", state.TransitionSpec{From: []string{"queued"}, To: "running", Fence: a.Fence()})
	if err != nil {
		t.Fatalf("fenced write by the holder: %v", err)
	}
	if r.Fence != a.Token {
		t.Errorf("record fence %d, want %d", r.Fence, a.Token)
	}
	time.Sleep(400 * time.Millisecond) // pod-a pauses past its lease
	_, err = s.LeaseHolder(ctx, "task:f")
	wantErr(t, "holder after expiry", err, state.ErrNotFound)
	_, err = s.RenewLease(ctx, a, time.Minute)
	wantErr(t, "renew after expiry", err, state.ErrLeaseLost)
	b, err := s.AcquireLease(ctx, "task:f", "pod-b", time.Minute)
	if err != nil {
		t.Fatalf("steal after expiry: %v", err)
	}
	if b.Token <= a.Token {
		t.Fatalf("token after steal %d, want > %d", b.Token, a.Token)
	}
	_, err = s.RenewLease(ctx, a, time.Minute)
	wantErr(t, "renew by the old holder", err, state.ErrLeaseLost)
	wantErr(t, "release by the old holder", s.ReleaseLease(ctx, a), state.ErrLeaseLost)
	// The old holder wakes up and tries to write: rejected although its version is current.
	cur, _ := s.Get(ctx, kind, "f")
	cur.Doc = []byte(`{"by":"a"}`)
	_, err = s.Update(ctx, cur, state.UpdateOptions{Fence: a.Fence()})
	wantErr(t, "write with a stale fence", err, state.ErrStaleFence)
	cur.Doc = []byte(`{"by":"b"}`)
	if _, err := s.Update(ctx, cur, state.UpdateOptions{Fence: b.Fence()}); err != nil {
		t.Fatalf("write with the new fence: %v", err)
	}
	got, _ := s.Get(ctx, kind, "f")
	if string(got.Doc) != `{"by":"b"}` || got.Fence != b.Token {
		t.Errorf("record after fenced writes: %+v", got)
	}
	// Releasing does not reset the fence: the stale writer stays rejected.
	if err := s.ReleaseLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	_, err = state.Transition(ctx, s, kind, "f", state.TransitionSpec{From: []string{"running"}, To: "failed", Fence: a.Fence()})
	wantErr(t, "transition with a stale fence after release", err, state.ErrStaleFence)
}
