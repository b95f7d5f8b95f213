package secret_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/secret"
)

func TestSealOpen(t *testing.T) {
	key, err := secret.ParseKey(secret.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := secret.New(key)
	sealed := s.Seal("sk-live-123", "simulation-task:1a2b3c4d")
	if strings.Contains(sealed, "sk-live") {
		t.Fatal("sealed value shows the plaintext")
	}
	if got, err := s.Open(sealed, "simulation-task:1a2b3c4d"); err != nil || got != "sk-live-123" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := s.Open(sealed, "simulation-task:ffffffff"); !errors.Is(err, secret.ErrOpen) {
		t.Fatal("opened a value sealed for another record")
	}
	other, _ := secret.ParseKey(secret.NewKey())
	s2, _ := secret.New(other)
	if _, err := s2.Open(sealed, "simulation-task:1a2b3c4d"); !errors.Is(err, secret.ErrOpen) {
		t.Fatal("opened with another key")
	}
	if _, err := s.Open(sealed[:len(sealed)-4]+"AAAA", "simulation-task:1a2b3c4d"); !errors.Is(err, secret.ErrOpen) {
		t.Fatal("opened a tampered value")
	}
	if first, second := s.Seal("x", "c"), s.Seal("x", "c"); first == second {
		t.Fatal("nonces repeat")
	}
}

func TestParseKeyRejectsWrongSizes(t *testing.T) {
	for _, bad := range []string{"", "short", "AAAA"} {
		if _, err := secret.ParseKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
