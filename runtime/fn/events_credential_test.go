package fn_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
)

// TestEventsNeedTheEventCredential: with LENS_EVENT_TOKEN /events takes an event only with the
// credential (401 without, no side effect), the handler sees the event's sender as its caller
// (so work it creates has an owner), and the function's own sends carry the credential.
func TestEventsNeedTheEventCredential(t *testing.T) {
	var mu sync.Mutex
	var sinkAuth []string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sinkAuth = append(sinkAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer sink.Close()
	const token = "stack-event-credential"
	e := storeEnv(t, map[string]string{"HOME": t.TempDir(), "LENS_EVENT_TOKEN": token, "K_SINK": sink.URL})
	cfg, err := fn.LoadConfig(env(e))
	if err != nil {
		t.Fatal(err)
	}
	var callers []string
	build := func(context.Context, fn.Deps) (*fn.Function, error) {
		return &fn.Function{Events: map[string]cloudevent.Handler{events.TypeDatasetDownloaded: func(ctx context.Context, _ cloudevent.Event) error {
			tok, ok := fn.Caller(ctx)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				callers = append(callers, tok.ID)
			} else {
				callers = append(callers, "")
			}
			return nil
		}}}, nil
	}
	s, srv := serve(t, cfg, "echo", build)
	if strings.Contains(fmt.Sprintf("%v %#v", cfg.EventToken, cfg.EventToken), token) {
		t.Fatal("the event credential formats as itself")
	}
	event := func(id string, header map[string]string) int {
		h := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": id, "Ce-Source": "/lensfn/workflow-orchestrator",
			"Ce-Type": events.TypeDatasetDownloaded, "Content-Type": "application/json"}
		for k, v := range header {
			h[k] = v
		}
		resp, body := do(t, "POST", srv.URL+"/events", `{}`, h)
		if strings.Contains(body, token) {
			t.Fatalf("the answer shows the credential: %s", body)
		}
		return resp.StatusCode
	}
	if got := event("e-1", nil); got != 401 {
		t.Fatalf("an event without the credential: %d", got)
	}
	if got := event("e-2", map[string]string{"Authorization": "Bearer wrong"}); got != 401 {
		t.Fatalf("an event with a wrong credential: %d", got)
	}
	if got := event("e-3", map[string]string{"Authorization": "Bearer " + token}); got != 202 {
		t.Fatalf("an event with the credential: %d", got)
	}
	mu.Lock()
	if len(callers) != 1 || callers[0] != fn.EventOwnerPrefix+"/lensfn/workflow-orchestrator" {
		t.Fatalf("handled with callers %q, want one, the event's sender", callers)
	}
	mu.Unlock()
	if err := s.Deps.Events.Send(context.Background(), events.TypeDatasetDownloaded, "sent-1", "", map[string]string{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sinkAuth) != 1 || sinkAuth[0] != "Bearer "+token {
		t.Fatalf("the function's send carried %q", sinkAuth)
	}
}

// TestEventsAreTakenOnlyAtAnInternalAddress: /events refuses a public Host (a request through
// the ingress, or a DNS-rebinding page) before anything is handled; the Broker's deliveries to
// the cluster-internal address go through.
func TestEventsAreTakenOnlyAtAnInternalAddress(t *testing.T) {
	var handled atomic.Int32
	srv := newServer(t, &handled)
	for host, want := range map[string]int{"simulation-api.lensfn.example.com": 403, "evil.example:8080": 403,
		"simulation-api.lensfn.svc.cluster.local": 202, "simulation-api.lensfn.svc": 202, "127.0.0.1": 202} {
		req, _ := http.NewRequest("POST", srv.URL+"/events", strings.NewReader(`{}`))
		req.Host = host
		for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "h-" + host, "Ce-Source": "/test",
			"Ce-Type": events.TypeDatasetDownloaded, "Content-Type": "application/json"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if handled.Load() != 3 {
		t.Fatalf("handled %d events, want the 3 internal ones", handled.Load())
	}
}
