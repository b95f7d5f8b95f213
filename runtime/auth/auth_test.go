package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

func TestParseScopes(t *testing.T) {
	got, err := auth.ParseScopes(" simulation:read,simulation:run,simulation:read ")
	if err != nil || auth.JoinScopes(got) != "simulation:read,simulation:run" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", ",", "simulation:write", "admin"} {
		if _, err := auth.ParseScopes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestVerify: a created token verifies with its scopes; a malformed, unknown or altered one does
// not; the bootstrap hash admits its token with every scope.
func TestVerify(t *testing.T) {
	srv, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	store, err := redisstore.Open(context.Background(), srv.URL(), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	tokens := &auth.Tokens{Store: store, BootstrapSHA256: auth.HashToken("boot")}
	secret, tok, err := tokens.Create(ctx, "ci", []auth.Scope{auth.SimulationRead})
	if err != nil || !strings.HasPrefix(secret, "lens_"+tok.ID+"_") {
		t.Fatalf("%q %v", secret, err)
	}
	got, err := tokens.Verify(ctx, secret)
	if err != nil || got.ID != tok.ID || !got.Allows(auth.SimulationRead) || got.Allows(auth.SimulationRun) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"", "lens_", "lens_" + tok.ID, secret + "0", strings.ToUpper(secret), "Bearer " + secret} {
		if _, err := tokens.Verify(ctx, bad); !errors.Is(err, auth.ErrInvalid) {
			t.Errorf("Verify(%q) = %v", bad, err)
		}
	}
	if boot, err := tokens.Verify(ctx, "boot"); err != nil || !boot.Allows(auth.InventoryAdmin) {
		t.Fatalf("bootstrap: %+v %v", boot, err)
	}
	if _, _, err := tokens.Create(ctx, "none", nil); err == nil {
		t.Fatal("a token without scopes was created")
	}
}
