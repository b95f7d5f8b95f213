package fn_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/sse"
)

// idle is a Source that never has an event and never ends: a stream on a queued task.
type idle struct{}

func (idle) Next(ctx context.Context, _ string, wait time.Duration) ([]sse.Event, bool, error) {
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return nil, false, nil
}
func (idle) Final(context.Context) (sse.Event, error) { return sse.Event{}, nil }

// TestRevokingATokenEndsItsStreams: an event stream opened with a token ends with an "error"
// event within seconds of the token's revocation, while a stream of another token stays open.
func TestRevokingATokenEndsItsStreams(t *testing.T) {
	e := storeEnv(t, map[string]string{"HOME": t.TempDir(), "LENS_AUTH": "required"})
	cfg, err := fn.LoadConfig(env(e))
	if err != nil {
		t.Fatal(err)
	}
	build := func(context.Context, fn.Deps) (*fn.Function, error) {
		return &fn.Function{Routes: []fn.Route{{Method: "GET", Path: "/api/stream", Scope: auth.SimulationRead,
			Handler: fn.Handle(func(w http.ResponseWriter, r *http.Request) error {
				return sse.Serve(w, r, idle{}, "", sse.Limits{Heartbeat: 500 * time.Millisecond, Poll: 500 * time.Millisecond})
			})}}}, nil
	}
	s, srv := serve(t, cfg, "streams", build)
	ctx := context.Background()
	revoked, revokedTok, err := s.Deps.Tokens.Create(ctx, "revoked", []auth.Scope{auth.SimulationRead})
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := s.Deps.Tokens.Create(ctx, "kept", []auth.Scope{auth.SimulationRead})
	if err != nil {
		t.Fatal(err)
	}
	open := func(secret string) (*bufio.Reader, func()) {
		req, _ := http.NewRequest("GET", srv.URL+"/api/stream", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("open: %v %v", resp, err)
		}
		return bufio.NewReader(resp.Body), func() { resp.Body.Close() }
	}
	revokedStream, closeRevoked := open(revoked)
	defer closeRevoked()
	keptStream, closeKept := open(kept)
	defer closeKept()
	if err := s.Deps.Tokens.Revoke(ctx, revokedTok.ID); err != nil {
		t.Fatal(err)
	}
	revokedAt := time.Now()
	var body strings.Builder
	for {
		line, err := revokedStream.ReadString('\n')
		body.WriteString(line)
		if err != nil {
			break // the server ended the stream
		}
		if time.Since(revokedAt) > 10*time.Second {
			t.Fatalf("the revoked token's stream is still open after 10s: %q", body.String())
		}
	}
	if took := time.Since(revokedAt); took > 4*time.Second || !strings.Contains(body.String(), "no longer valid") {
		t.Fatalf("the stream ended %v after the revocation with %q", took, body.String())
	}
	// The other token's stream is still alive: it keeps sending heartbeats.
	done := make(chan string, 1)
	go func() {
		line, _ := keptStream.ReadString('\n')
		for strings.TrimSpace(line) == "" || strings.HasPrefix(line, "retry:") {
			line, _ = keptStream.ReadString('\n')
		}
		done <- line
	}()
	select {
	case line := <-done:
		if !strings.Contains(line, "heartbeat") {
			t.Fatalf("the kept stream sent %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the kept stream went silent")
	}
}
