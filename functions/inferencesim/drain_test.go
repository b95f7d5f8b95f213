package inferencesim

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

// TestGracefulDrain: after the serve context ends (SIGTERM in Run) the
// in-flight request still completes, readiness turns 503 and Serve returns.
func TestGracefulDrain(t *testing.T) {
	cfg, err := config.Parse([]string{"--model", "fake-model", "--time-to-first-token", "300ms"}, config.Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(cfg, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.ServeListeners(ctx, []net.Listener{ln}) }()
	changes := watchScheduler(sim)

	result := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`))
		if err != nil {
			result <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		result <- resp.StatusCode
	}()
	waitScheduler(t, changes, "the request running", func(c schedCounts) bool { return c.running == 1 })
	cancel()
	if status := <-result; status != 200 {
		t.Fatalf("in-flight request got %d during drain", status)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	if !sim.draining.Load() {
		t.Fatal("not marked draining")
	}
}
