package inferencesim

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

// testSim is a simulator serving on real loopback listeners.
type testSim struct {
	sim  *Simulator
	urls []string // one base URL per rank
}

// startSim starts a simulator with the given flags (--model defaults to
// fake-model, --seed to 7) and stops it when the test ends.
func startSim(t testing.TB, args ...string) *testSim {
	t.Helper()
	return startSimEnv(t, config.Environment{}, args...)
}

func startSimEnv(t testing.TB, env config.Environment, args ...string) *testSim {
	t.Helper()
	return startSimWith(t, env, nil, args...)
}

// startSimWith is startSimEnv with extra options applied after the defaults (a test's
// hooks go in before the simulator serves, so they need no synchronisation).
func startSimWith(t testing.TB, env config.Environment, opts []Option, args ...string) *testSim {
	t.Helper()
	return startSimListening(t, env, opts, nil, args...)
}

// startSimListening is startSimWith with each rank's listener passed through wrap (nil: as is).
func startSimListening(t testing.TB, env config.Environment, opts []Option, wrap func(net.Listener) net.Listener, args ...string) *testSim {
	t.Helper()
	joined := " " + strings.Join(args, " ")
	if !strings.Contains(joined, " --model") {
		args = append(args, "--model", "fake-model")
	}
	if !strings.Contains(joined, " --seed") {
		args = append(args, "--seed", "7")
	}
	cfg, err := config.Parse(args, env, nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	sim, err := New(cfg, append([]Option{WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lns := make([]net.Listener, len(sim.ranks))
	ts := &testSim{sim: sim}
	scheme := "http://"
	if sim.tlsConf != nil {
		scheme = "https://"
	}
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		if wrap != nil {
			lns[i] = wrap(ln)
		}
		ts.urls = append(ts.urls, scheme+ln.Addr().String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.ServeListeners(ctx, lns) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("simulator did not stop")
		}
	})
	return ts
}

func (ts *testSim) url() string { return ts.urls[0] }

// post sends a JSON body and returns status, headers and body.
func post(t testing.TB, url, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(t testing.TB, body string) []string {
	t.Helper()
	var out []string
	for _, frame := range strings.Split(body, "\n\n") {
		if frame == "" {
			continue
		}
		if !strings.HasPrefix(frame, "data: ") {
			t.Fatalf("frame without data prefix: %q", frame)
		}
		out = append(out, strings.TrimPrefix(frame, "data: "))
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// schedCounts is one change of a rank's scheduler: running and waiting requests.
type schedCounts struct{ running, waiting int }

// watchScheduler reports every change of rank 0's scheduler on the returned channel (the
// metrics gauges keep being updated). Tests wait on it instead of sleeping "until the
// request is in flight".
func watchScheduler(sim *Simulator) <-chan schedCounts {
	ch := make(chan schedCounts, 64)
	s := sim.ranks[0].sched
	s.Watch(func(running, waiting int) { // runs under the scheduler's lock: never block
		select {
		case ch <- schedCounts{running, waiting}:
		default: // a test that stopped listening must not block the scheduler
		}
	})
	return ch
}

// waitScheduler waits until the scheduler reports counts for which ok is true.
func waitScheduler(t testing.TB, ch <-chan schedCounts, what string, ok func(schedCounts) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if ok(c) {
				return
			}
		case <-timeout:
			t.Fatalf("the scheduler never reported %s", what)
		}
	}
}
