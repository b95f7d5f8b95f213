package fn_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/state"
)

// TestStoreOutageIs503EverywhereAndLoggedOnce: with the store unreachable, API routes answer
// 503 problem+json with Retry-After instead of 500, readiness fails, events get a retryable
// status, and the log says so once for the whole outage and once when it is over.
func TestStoreOutageIs503EverywhereAndLoggedOnce(t *testing.T) {
	store := fntest.NewOutage(t)
	logFile := filepath.Join(t.TempDir(), "fn.log")
	cfg, err := fn.LoadConfig(env(map[string]string{"HOME": t.TempDir(), "REDIS_URL": store.URL, "LENS_AUTH": "off",
		"K_LOGGING_CONFIG": fmt.Sprintf(`{"level":"info","encoding":"json","outputPaths":[%q],"errorOutputPaths":["stderr"]}`, logFile)}))
	if err != nil {
		t.Fatal(err)
	}
	s, srv := serve(t, cfg, "outage", func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		thing := fn.Handle(func(w http.ResponseWriter, r *http.Request) error {
			if _, err := d.Store.Get(r.Context(), "thing", r.PathValue("id")); err != nil && !errors.Is(err, state.ErrNotFound) {
				return fmt.Errorf("read the thing: %w", err)
			}
			fn.WriteJSON(w, http.StatusOK, map[string]string{"ok": "yes"})
			return nil
		})
		return &fn.Function{Routes: []fn.Route{{Method: "GET", Path: "/api/things/{id}", Scope: auth.SimulationRead, Handler: thing}}, Events: map[string]cloudevent.Handler{
			events.TypeDatasetDownloaded: func(ctx context.Context, e cloudevent.Event) error {
				if _, err := d.Store.Get(ctx, "thing", "x"); !errors.Is(err, state.ErrNotFound) {
					return err
				}
				return nil
			}}}, nil
	})

	if resp, body := do(t, "GET", srv.URL+"/api/things/1", "", nil); resp.StatusCode != 200 {
		t.Fatalf("before the outage: %d %s", resp.StatusCode, body)
	}
	store.Cut()
	for i := range 3 {
		resp, body := do(t, "GET", srv.URL+"/api/things/"+fmt.Sprint(i), "", nil)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, `"service_unavailable"`) {
			t.Fatalf("during the outage: %d %v %s", resp.StatusCode, resp.Header, body)
		}
		if strings.Contains(body, "127.0.0.1") {
			t.Fatalf("the 503 discloses the store's address: %s", body)
		}
	}
	if resp, _ := do(t, "GET", srv.URL+"/readyz", "", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readiness during the outage: %d", resp.StatusCode)
	}
	if resp := deliver(t, srv.URL, "e1"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("an event during the outage: %d, want 503 (redelivered)", resp.StatusCode)
	}
	store.Restore()
	// The store dials again on the next command once the server is back.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, body := do(t, "GET", srv.URL+"/api/things/1", "", nil)
		if resp.StatusCode == 200 {
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the outage: %d %s", resp.StatusCode, body)
		}
	}
	if resp := deliver(t, srv.URL, "e1"); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the redelivered event after the outage: %d", resp.StatusCode)
	}
	_ = s.Deps.Log.Sync()
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	logs := string(raw)
	if n := strings.Count(logs, "state store unavailable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs)
	}
	if n := strings.Count(logs, "state store reachable again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs)
	}
	if strings.Contains(logs, "request failed") || strings.Contains(logs, "event dedupe") {
		t.Errorf("requests failing during the outage were logged one by one:\n%s", logs)
	}
}

// TestEventHandlerHittingAnOutageIsRedelivered: a handler whose store call finds the store down
// answers 503 (retryable), even when it wrapped the error as permanent.
func TestEventHandlerHittingAnOutageIsRedelivered(t *testing.T) {
	cfg, err := fn.LoadConfig(env(storeEnv(t, map[string]string{"HOME": t.TempDir()})))
	if err != nil {
		t.Fatal(err)
	}
	_, srv := serve(t, cfg, "outage", func(context.Context, fn.Deps) (*fn.Function, error) {
		return &fn.Function{Events: map[string]cloudevent.Handler{
			events.TypeDatasetDownloaded: func(context.Context, cloudevent.Event) error {
				return cloudevent.Permanent(fmt.Errorf("read the dataset: %w", state.ErrUnavailable))
			}}}, nil
	})
	resp := deliver(t, srv.URL, "e1")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d, want 503 with Retry-After", resp.StatusCode)
	}
}
