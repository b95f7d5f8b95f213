package inferencerouter

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
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

// A streaming client that stops reading loses its stream within
// --stream-write-timeout: the replica connection it held is closed, the
// replica leaves the in-flight count, and with --upstream-max-conns 1 the
// next request gets that one connection.
func TestStalledStreamClientReleasesItsReplicaConnection(t *testing.T) {
	chunk := "data: " + strings.Repeat("t", 16<<10) + "\n\n"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Path == "/v1/completions" { // a short stream
			io.WriteString(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		for { // an endless stream, as fast as the router takes it
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			default:
			}
		}
	}))
	t.Cleanup(upstream.Close)
	rt := New(testConfig(t, "--replicas", upstream.URL, "--upstream-max-conns", "1", "--upstream-conn-wait", "5s",
		"--stream-write-timeout", "200ms"))
	base := serve(t, rt)

	stalled, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.(*net.TCPConn).SetReadBuffer(4 << 10)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	io.WriteString(stalled, "POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body) // and never reads
	waitUntil(t, func() bool { return rt.main.replicas[0].inflight.Load() == 1 })
	waitUntil(t, func() bool { return rt.main.replicas[0].inflight.Load() == 0 })

	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != `{"object":"list","data":[]}` {
		t.Fatalf("after the stalled stream: %d %q, want the replica's 200", resp.StatusCode, got)
	}

	// a client that reads keeps its connection: the per-write deadline of
	// its stream is gone once the stream ends, so a request on the same
	// connection later than the timeout is answered
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
	for i, path := range []string{"/v1/completions", "/v1/models"} {
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, base+path, strings.NewReader(`{}`))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (i == 0 && string(got) != "data: one\n\ndata: [DONE]\n\n") {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, got)
		}
		time.Sleep(400 * time.Millisecond)
	}
	if len(reused) != 2 || !reused[1] {
		t.Fatalf("connection reuse %v: the request after the stream did not get the stream's connection", reused)
	}
}

// nestedContentBody is a chat request whose content nests levels deep,
// ~70 KB for 4900 levels (encoding/json's own limit is 10000).
func nestedContentBody(levels int) string {
	return `{"model":"m","messages":[{"role":"user","content":` + strings.Repeat(`[{"content":`, levels) + `"x"` + strings.Repeat(`}]`, levels) + `}]}`
}

// Reading a prompt's text costs a bounded number of passes over the body
// however deep its content nests: counted in allocations, which each pass
// makes per level it decodes (one pass per level was ~5 s of CPU here).
// The shapes OpenAI defines, up to a Responses input item's parts, are
// read for their text as before.
func TestNestedContentIsReadInBoundedPasses(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, c := range []struct{ body, text string }{
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]}]}`, "user\x00a\x00"},
		{`{"input":[{"role":"user","content":[{"type":"input_text","text":"b"}]},{"role":"user","content":"c"}]}`, "bc"},
		{`{"prompt":["d","e"]}`, "de"},
	} {
		req, err := peekPrompt([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(req.appendPromptText(nil)); got != c.text {
			t.Errorf("%s: text %q, want %q", c.body, got, c.text)
		}
	}
	req, err := peekPrompt([]byte(nestedContentBody(4900)))
	if err != nil {
		t.Fatal(err)
	}
	// a few buffers and the decoded parts of the levels read: ~100; a pass
	// per level is several allocations a level, tens of thousands
	if allocs := testing.AllocsPerRun(3, func() { req.appendPromptText(nil) }); allocs > 500 {
		t.Fatalf("reading the prompt of content 4900 levels deep allocates %.0f times: work grows with depth", allocs)
	}
}

// A body whose content nests thousands deep, under a prefix profile, is
// answered (it is valid JSON, routed on its raw bytes) within a wall
// time far under the seconds of CPU one parse per level took.
func TestDeeplyNestedContentIsAnsweredQuickly(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 2)
	base := serve(t, New(testConfig(t, "--replicas", strings.Join(urls, ","), "--profile", "prefix-affinity")))
	start := time.Now()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(nestedContentBody(4900)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != 200 || took > 2*time.Second {
		t.Fatalf("answered %d after %s, want 200 well within 2s", resp.StatusCode, took)
	}
}

// Headers a Connection header names are this hop's, like the fixed
// hop-by-hop set: neither the client's reach the replica nor the
// replica's the client, and the others pass.
func TestHeadersNamedByConnectionAreDropped(t *testing.T) {
	got := make(chan http.Header, 1)
	replica := rawReplica(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		got <- req.Header
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: X-Replica-Hop, keep-alive\r\nConnection: X-Other-Hop\r\n"+
			"X-Replica-Hop: internal\r\nX-Other-Hop: internal\r\nX-Replica-Says: hello\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	})
	base := serve(t, New(testConfig(t, "--replicas", replica)))
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: r\r\nConnection: keep-alive, X-Hop\r\nConnection: x-second-hop\r\n"+
		"X-Hop: internal\r\nX-Second-Hop: internal\r\nX-Hop-Not: passes\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("X-Hop") != "" || h.Get("X-Second-Hop") != "" || h.Get("X-Hop-Not") != "passes" {
		t.Errorf("the replica got %v: want X-Hop and X-Second-Hop dropped, X-Hop-Not passed", h)
	}
	if resp.StatusCode != 200 || resp.Header.Get("X-Replica-Hop") != "" || resp.Header.Get("X-Other-Hop") != "" || resp.Header.Get("X-Replica-Says") != "hello" {
		t.Errorf("the client got %d %v: want X-Replica-Hop and X-Other-Hop dropped, X-Replica-Says passed", resp.StatusCode, resp.Header)
	}
}

// The replica gets the path exactly as the client sent it, escapes
// undecoded, the query as it was; routing reads the decoded path, and a
// /balanced/ prefix counts only as sent.
func TestPathsReachTheReplicaAsSent(t *testing.T) {
	lines := make(chan string, 1)
	replica := rawReplica(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		lines <- req.RequestURI
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
	})
	addr := strings.TrimPrefix(serve(t, New(testConfig(t, "--replicas", replica))), "http://")
	for _, c := range []struct{ sent, status, arrives string }{
		{"/v1/models/a%2Fb", "200", "/v1/models/a%2Fb"},
		{"/v1/models/id%25x?q=a%20b&r=%2F", "200", "/v1/models/id%25x?q=a%20b&r=%2F"},
		{"/v1/%252e%252e/admin", "200", "/v1/%252e%252e/admin"},
		{"/balanced/v1/models/a%2Fb?x=%2F", "200", "/v1/models/a%2Fb?x=%2F"},
		{"/v1/%2e%2e/admin", "404", ""},      // decoded it is /admin: no route
		{"/balanced%2Fv1/models", "404", ""}, // /balanced/ only once decoded
	} {
		got := rawExchange(t, addr, "GET "+c.sent+" HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 "+c.status+" ") {
			t.Errorf("%s: answered %q, want %s", c.sent, got[:min(len(got), 120)], c.status)
			continue
		}
		if c.arrives == "" {
			continue
		}
		if line := <-lines; line != c.arrives {
			t.Errorf("%s reached the replica as %s, want %s", c.sent, line, c.arrives)
		}
	}
}

// A replica that does not answer within --upstream-timeout is a 504, one
// whose answer is not HTTP a 502: OpenAI errors naming neither the
// replica's address nor what it sent (the replica is in
// X-Inference-Router-Replica, as on its answers), counted as transport
// errors.
func TestReplicaFailuresAnswerWithoutInternals(t *testing.T) {
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(block) }) // first: Close waits for the handler
	garbled := rawReplica(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, "HTTP/1.1 2x0 internal-detail\r\nX: y\r\n\r\n")
		}
	})
	for _, c := range []struct {
		name, replica string
		status        int
		message       string
	}{
		{"timeout", slow.URL, 504, "did not answer within the router's upstream timeout of 200ms"},
		{"not HTTP", garbled, 502, "could not be read"},
	} {
		base := serve(t, New(testConfig(t, "--replicas", c.replica, "--upstream-timeout", "200ms")))
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hostPort := strings.TrimPrefix(c.replica, "http://")
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.message) || !strings.Contains(string(body), `"type":"InternalServerError"`) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, resp.StatusCode, body, c.status, c.message)
		}
		if strings.Contains(string(body), hostPort) || strings.Contains(string(body), "fasthttp") || strings.Contains(string(body), "internal-detail") {
			t.Errorf("%s: the answer names internals: %s", c.name, body)
		}
		if got := resp.Header.Get("X-Inference-Router-Replica"); got != c.replica {
			t.Errorf("%s: X-Inference-Router-Replica %q, want %q", c.name, got, c.replica)
		}
		if got := metricSum(t, base, `inference_router_upstream_errors_total{kind="transport",pool="",replica="`+c.replica+`"}`); got != 1 {
			t.Errorf("%s: transport errors %v, want 1", c.name, got)
		}
	}
}
