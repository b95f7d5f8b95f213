package inferencerouter

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the router's server may write to while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveWithStderr runs a router for cfg through Serve on a loopback
// listener, its stderr captured, and returns its address.
func serveWithStderr(t *testing.T, cfg Config) (addr string, stderr *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stderr = new(syncBuffer)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, ln, stderr) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String(), stderr
}

// rawExchange writes request to addr as bytes and returns everything the
// router answers before it closes the connection.
func rawExchange(t *testing.T, addr, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(bufio.NewReader(c))
	return string(got)
}

// A request the server cannot parse is answered with a fixed OpenAI error
// per kind of failure: neither the answer nor the router's log repeats the
// request, so a client's token in it goes nowhere.
func TestUnparseableRequestsEchoNothing(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 1)
	addr, stderr := serveWithStderr(t, testConfig(t, "--replicas", urls[0], "--max-request-body-size-mb", "1"))
	const token = "sk-secret-4711"
	for _, c := range []struct {
		name, request, status, message string
	}{
		{"malformed header line", "POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nAuthorization: Bearer " + token + "\r\nBroken line\r\nContent-Length: 2\r\n\r\n{}",
			"HTTP/1.1 400 ", "malformed request"},
		{"header block too large", "POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nAuthorization: Bearer " + token + "\r\nX-Pad: " + strings.Repeat("p", maxHeaderBytes) + "\r\n\r\n",
			"HTTP/1.1 431 ", "request headers are over"},
		{"body too large", "POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nAuthorization: Bearer " + token + "\r\nContent-Length: 2000000\r\n\r\n{\"" + token + "\":1}",
			"HTTP/1.1 413 ", "request body is over"},
	} {
		got := rawExchange(t, addr, c.request)
		if !strings.HasPrefix(got, c.status) || !strings.Contains(got, c.message) || !strings.Contains(got, `"type":"BadRequestError"`) {
			t.Errorf("%s: answered %q, want %q... with %q", c.name, got[:min(len(got), 300)], c.status, c.message)
		}
		if strings.Contains(got, token) || strings.Contains(got, "Broken line") {
			t.Errorf("%s: the answer echoes the request: %q", c.name, got[:min(len(got), 300)])
		}
	}
	// fasthttp logs the malformed request's connection error after closing
	// it: to the router's stderr, as a line that names no part of the request
	waitUntil(t, func() bool { return strings.Contains(stderr.String(), "error when serving connection") })
	if log := stderr.String(); strings.Contains(log, token) || strings.Contains(log, "Broken line") {
		t.Errorf("the router's stderr repeats a request:\n%s", log)
	}
}
