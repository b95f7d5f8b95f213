//go:build linux

package router_test

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serve answers on a loopback listener with h and returns its address.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write([]byte(body))
}

// The sender sends exactly its schedule, on keep-alive connections, and times each request
// from its write to its answer's last byte.
func TestOpenLoopSenderTimesEveryRequest(t *testing.T) {
	const delay = 3 * time.Millisecond
	var got atomic.Int64
	var mu sync.Mutex
	remotes := map[string]bool{}
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || r.Header.Get("Content-Type") != "application/json" {
			answer(w, 400, "unexpected request")
			return
		}
		got.Add(1)
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		time.Sleep(delay)
		answer(w, 200, `{"ok":true}`)
	})
	o, err := newOpenLoop(addr, "/v1/chat/completions", []byte(chatBody), 1000, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.errors != 0 || len(res.latencyUS) != 300 || got.Load() != 300 || len(res.lagUS) != 300 {
		t.Fatalf("errors %d, answered %d, served %d, sent %d: want 0, 300, 300, 300", res.errors, len(res.latencyUS), got.Load(), len(res.lagUS))
	}
	if min := res.latencyUS[0]; min < float64(delay.Microseconds()) {
		t.Fatalf("fastest request %.0f us: the server holds each for %s", min, delay)
	}
	// absolute schedule: the last request is not sent before 299 ms
	if res.elapsed < 299*time.Millisecond {
		t.Fatalf("300 requests at 1000/s took %s", res.elapsed)
	}
	// keep-alive: at most the connections that were in use at once, far fewer than requests
	mu.Lock()
	n := len(remotes)
	mu.Unlock()
	if n > res.conns || n >= 300 {
		t.Fatalf("%d client connections for 300 requests (sender reports %d)", n, res.conns)
	}
}

// Answers that are not 200, and connections the server breaks, count as errors.
func TestOpenLoopSenderCountsErrors(t *testing.T) {
	var n atomic.Int64
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			answer(w, 200, "fine")
		case 1:
			answer(w, 503, "busy")
		default:
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
		}
	})
	o, err := newOpenLoop(addr, "/v1/chat/completions", []byte(chatBody), 500, 60*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.run()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.latencyUS) != 10 || res.errors != 20 {
		t.Fatalf("answered %d, errors %d: want 10 answered and 20 errors of 30", len(res.latencyUS), res.errors)
	}
}

// A request still unanswered when the drain after the last send is over counts as an error,
// and the run ends then.
func TestOpenLoopSenderGivesUpAfterTheDrain(t *testing.T) {
	release := make(chan struct{})
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		answer(w, 200, "late")
	})
	t.Cleanup(func() { close(release) })
	o, err := newOpenLoop(addr, "/v1/chat/completions", []byte(chatBody), 100, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	o.drain = 100 * time.Millisecond
	res, err := o.run()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.latencyUS) != 0 || res.errors != 5 || res.elapsed > 5*time.Second {
		t.Fatalf("answered %d, errors %d in %s: want 0 and 5 within the drain", len(res.latencyUS), res.errors, res.elapsed)
	}
}

func TestParseAnswer(t *testing.T) {
	for _, c := range []struct {
		in               string
		status           int
		closeAfter, done bool
		wantErr          string
	}{
		{in: "HTTP/1.1 200 OK\r\nContent-Le", done: false},
		{in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", status: 200, done: false},
		{in: "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", status: 200, done: true},
		{in: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status: 503, closeAfter: true, done: true},
		{in: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhello", wantErr: "past the answer"},
		{in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", wantErr: "only Content-Length framing"},
		{in: "HTTP/1.1 200 OK\r\nServer: x\r\n\r\n", wantErr: "without Content-Length"},
		{in: "SSH-2.0-OpenSSH\r\n\r\n", wantErr: "status line"},
	} {
		status, closeAfter, done, err := parseAnswer([]byte(c.in))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want one saying %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || status != c.status || closeAfter != c.closeAfter || done != c.done {
			t.Errorf("%q: %d %v %v %v, want %d %v %v", c.in, status, closeAfter, done, err, c.status, c.closeAfter, c.done)
		}
	}
}
