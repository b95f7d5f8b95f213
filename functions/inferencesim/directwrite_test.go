package inferencesim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

// tokenEvents checks a completions stream's events (each token chunk JSON with one choice,
// then the finish chunk and [DONE]) and returns how many carried a token.
func tokenEvents(t *testing.T, body string) int {
	t.Helper()
	ev := sseEvents(t, body)
	if len(ev) < 2 || ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("%d events, the last %q", len(ev), ev[len(ev)-1])
	}
	tokens := 0
	for i, e := range ev[:len(ev)-1] {
		var c completion
		if err := json.Unmarshal([]byte(e), &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("event %d %q: %v", i, e, err)
		}
		if c.Choices[0].FinishReason == "" {
			tokens++
		} else if i != len(ev)-2 {
			t.Fatalf("a finish reason at event %d of %d", i, len(ev))
		}
	}
	return tokens
}

// In engine mode the rank's loop writes a stream's token chunks itself once its headers are
// out: the chunks are framed as fasthttp frames them (net/http's strict chunked reader reads
// every token), the connection stays usable for the next request, and the loop, not the
// stream's goroutine, wrote most of the chunks.
func TestEngineLoopWritesTheStreams(t *testing.T) {
	ts := startEngineSim(t)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, DisableCompression: true}}
	var dialled int
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled++
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	for range 2 {
		body := `{"model":"` + engineModel + `","prompt":"` + words(50) + `","max_tokens":40,"ignore_eos":true,"stream":true}`
		resp, err := client.Post(ts.url()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("%d %v %v: %s", resp.StatusCode, resp.TransferEncoding, err, raw)
		}
		if n := tokenEvents(t, string(raw)); n != 40 {
			t.Fatalf("%d token chunks, want 40", n)
		}
	}
	if dialled != 1 {
		t.Errorf("two streams took %d connections: the first one's was not left usable", dialled)
	}
	e := ts.sim.ranks[0].engine
	if n := e.directChunks.Load(); n < 60 {
		t.Errorf("the loop wrote %d of 80 token chunks itself", n)
	}
	if n := e.directFallbacks.Load(); n != 0 {
		t.Errorf("%d fall-backs with clients that read", n)
	}
}

// smallSendBuffers accepts TCP connections with a 4 KiB send buffer, still as *net.TCPConn.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A client that stops reading never stalls the loop: once its socket is full the stream goes
// back to its own goroutine, which waits for that client alone, while another stream on the
// same rank keeps its pace; when the client reads again every token arrives, in order.
func TestEngineSlowClientFallsBackToItsGoroutine(t *testing.T) {
	const model = "meta-llama/Llama-3.2-1B"
	// The simulator's sockets get a small send buffer, so a client that stops reading fills
	// one within a few hundred tokens.
	ts := startSimListening(t, config.Environment{}, nil, func(ln net.Listener) net.Listener { return smallSendBuffers{ln} },
		"--model", model, "--latency-calculator", "engine", "--max-num-seqs", "8", "--max-model-len", "8192", "--seed", "7")
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	const slowTokens = 1500
	body := `{"model":"` + model + `","prompt":"hello","max_tokens":` + itoa(slowTokens) + `,"ignore_eos":true,"stream":true}`
	if _, err := io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: "+
		itoa(len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	e := ts.sim.ranks[0].engine
	deadline := time.Now().Add(20 * time.Second)
	for e.directFallbacks.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no fall-back after 20 s of a client that does not read (%d chunks written by the loop)", e.directChunks.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The rank is not stalled: another stream runs at the engine's pace meanwhile.
	start := time.Now()
	code, _, raw := post(t, ts.url()+"/v1/completions", `{"model":"`+model+`","prompt":"hi","max_tokens":50,"ignore_eos":true,"stream":true}`)
	if took := time.Since(start); code != 200 || took > 5*time.Second {
		t.Fatalf("a second stream beside a stalled client: %d after %v", code, took)
	}
	if n := tokenEvents(t, raw); n != 50 {
		t.Fatalf("the second stream had %d tokens", n)
	}
	// The stalled client reads at last and gets everything, framed.
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the stalled stream: %v after %d bytes", err, len(all))
	}
	if n := tokenEvents(t, string(all)); n != slowTokens {
		t.Fatalf("the stalled stream had %d tokens, want %d", n, slowTokens)
	}
}
