package fntest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/fn"
)

// Env returns a function environment for a test: LENS_DATA_DIR in a temporary directory,
// REDIS_URL from the test's environment (empty: the runtime's embedded server), and a store key
// prefix no other test shares; extra entries are added on top.
func Env(t testing.TB, extra map[string]string) map[string]string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	env := map[string]string{"LENS_DATA_DIR": t.TempDir(), "REDIS_URL": os.Getenv("REDIS_URL"),
		"LENS_STORE_PREFIX": "lens:{test-" + hex.EncodeToString(b[:]) + "}:"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// Config loads env as a function's configuration.
func Config(t testing.TB, env map[string]string) fn.Config {
	t.Helper()
	cfg, err := fn.LoadConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Deps opens what the runtime hands a Builder (store, event sender, metrics, logger) for the
// named function, closed when the test ends.
func Deps(t testing.TB, name string, env map[string]string) fn.Deps {
	t.Helper()
	var deps fn.Deps
	s, err := fn.NewServer(context.Background(), Config(t, env), name, func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		deps = d
		return &fn.Function{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return deps
}

// Token mints a token with scopes (every scope when none is given) in the server's store.
func Token(t testing.TB, s *fn.Server, scopes ...auth.Scope) string {
	t.Helper()
	if len(scopes) == 0 {
		scopes = auth.Scopes
	}
	secret, _, err := s.Deps.Tokens.Create(context.Background(), t.Name(), scopes)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// BearerTransport adds Authorization: Bearer to every request that has none.
type BearerTransport struct {
	Token string
	Base  http.RoundTripper // nil: http.DefaultTransport
}

func (b BearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := b.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.Token)
	}
	return base.RoundTrip(r)
}

// AuthorizeDefaultClient makes http.DefaultClient (and so http.Get) send a token with every
// scope to the server for the rest of the test, so API tests run with authentication on. It
// changes a global: tests using it must not run in parallel.
func AuthorizeDefaultClient(t testing.TB, s *fn.Server) string {
	t.Helper()
	token := Token(t, s)
	saved := http.DefaultClient
	http.DefaultClient = &http.Client{Transport: BearerTransport{Token: token}}
	t.Cleanup(func() { http.DefaultClient = saved })
	return token
}

// WaitWarm waits until the function at baseURL has no start-up work left (its /readyz lists
// no "warming: " line, e.g. WASM modules compiling in the background), failing the test
// after two minutes.
func WaitWarm(t testing.TB, baseURL string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(baseURL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && !strings.Contains(string(body), fn.WarmingPrefix) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still warming after 2 minutes: %d %s", baseURL, resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not waiting out a duration
	}
}
