package redistest

import (
	"context"
	"testing"

	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// Open starts an embedded server and opens a store on it.
func Open(t testing.TB) *redisstore.Store {
	t.Helper()
	e, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	s, err := redisstore.Open(context.Background(), e.URL(), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
