package inferencerouter

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/runtime/conntest"
)

// countingServer is conntest's, under the name the router's tests call it by.
var countingServer = conntest.CountingServer

// rawReplica serves each loopback connection with serveConn (closing it
// after) and returns its base URL: a replica speaking HTTP by hand.
func rawReplica(t *testing.T, serveConn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serveConn(c) }()
		}
	}()
	return "http://" + ln.Addr().String()
}

// Answers of every framing reach the client whole, and each leaves the
// replica's connection reusable: a small Content-Length answer (read whole),
// one over maxBufferedAnswer and a chunked one (both streamed through), an
// empty 204 and a HEAD. One connection carries them all, one after another.
func TestAnswersOfEveryFramingKeepTheConnection(t *testing.T) {
	large := strings.Repeat("0123456789abcdef", (maxBufferedAnswer+1000)/16)
	upstream, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/small":
			w.Header().Set("Content-Length", "11")
			io.WriteString(w, `{"ok":true}`)
		case "/v1/large":
			w.Header().Set("Content-Length", strconv.Itoa(len(large)))
			io.WriteString(w, large)
		case "/v1/chunked":
			io.WriteString(w, "part one, ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part two")
		case "/v1/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Length", "5")
			if r.Method != http.MethodHead {
				io.WriteString(w, "hello")
			}
		}
	})
	router := serve(t, New(testConfig(t, "--replicas", upstream.URL)))
	client := &http.Client{}
	for round := range 3 {
		for _, c := range []struct{ method, path, want string }{
			{"POST", "/v1/small", `{"ok":true}`}, {"POST", "/v1/large", large}, {"POST", "/v1/chunked", "part one, part two"},
			{"POST", "/v1/empty", ""}, {"HEAD", "/v1/head", ""}, {"GET", "/v1/head", "hello"},
		} {
			req, _ := http.NewRequest(c.method, router+c.path, strings.NewReader("{}"))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("round %d %s %s: %v", round, c.method, c.path, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != c.want || resp.StatusCode >= 300 {
				t.Fatalf("round %d %s %s: %d, %d bytes %v, want %d bytes", round, c.method, c.path, resp.StatusCode, len(body), err, len(c.want))
			}
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the router opened %d connections to the replica for 18 sequential requests, want 1", n)
	}
}

// A pooled connection the replica closed after its last answer is retried
// on a new one, not answered 502: the replica here closes every connection
// after one answer, without saying so.
func TestClosedPooledConnectionIsRetried(t *testing.T) {
	var served atomic.Int64
	replica := rawReplica(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		served.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	})
	rt := New(testConfig(t, "--replicas", replica))
	for i := range 5 {
		if rec := post(t, rt, "/v1/chat/completions", `{}`); rec.Code != 200 || rec.Body.String() != "{}" {
			t.Fatalf("request %d: %d %q", i, rec.Code, rec.Body.String())
		}
	}
	if served.Load() != 5 {
		t.Fatalf("the replica answered %d requests, want 5 (one each: nothing replayed)", served.Load())
	}
}

// A replica that sends less than the Content-Length it declared is a 502,
// and its partial answer is not passed on as if whole.
func TestTruncatedAnswerIsABadGateway(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
		c.Close()
	}))
	t.Cleanup(upstream.Close)
	rt := New(testConfig(t, "--replicas", upstream.URL))
	if rec := post(t, rt, "/v1/chat/completions", `{}`); rec.Code != 502 || strings.Contains(rec.Body.String(), "only this") {
		t.Fatalf("truncated answer: %d %q", rec.Code, rec.Body.String())
	}
}

// A small answer from a real replica connection costs the exchange no
// allocations: it is read into the pooled response, the connection goes
// back to the pool, and nothing per request is left to the collector
// (streaming every answer, as fasthttp's HostClient.Do does for a
// streaming client, allocated its stream's closures and wrappers each time).
func TestSmallAnswerExchangeAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	// a replica that allocates nothing per request either: fixed buffers, one canned answer
	replica := rawReplica(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}")
		n := 0
		for {
			k, err := c.Read(buf[n:])
			if err != nil {
				return
			}
			n += k
			if bytes.HasSuffix(buf[:n], []byte("\r\n\r\n{}")) { // the whole request (its body is {})
				n = 0
				if _, err := c.Write(answer); err != nil {
					return
				}
			}
		}
	})
	rt := New(testConfig(t, "--replicas", replica))
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(new(fasthttp.Request), nil, nil)
	allocs := testing.AllocsPerRun(300, func() {
		ctx.Request.Reset()
		ctx.Request.Header.SetMethod(http.MethodPost)
		ctx.Request.SetRequestURI("/v1/chat/completions")
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBodyString("{}")
		ctx.Response.Reset()
		rt.handle(ctx)
		if ctx.Response.StatusCode() != 200 || string(ctx.Response.Body()) != `{"ok":true}` {
			t.Fatalf("%d %q", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per request through a real replica connection, want none", allocs)
	}
}

// --upstream-max-conns bounds the connections to a replica: requests beyond
// it wait for a pooled connection and are all answered; one that waits
// longer than --upstream-conn-wait is a 503 with Retry-After, counted as a
// pool error, and the replica is not marked down.
func TestUpstreamConnectionsAreBounded(t *testing.T) {
	release := make(chan struct{})
	var open, peak atomic.Int64
	upstream, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := open.Add(1)
		defer open.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	})
	rt := New(testConfig(t, "--replicas", upstream.URL, "--upstream-max-conns", "2", "--upstream-conn-wait", "10s"))
	base := serve(t, rt)
	const requests = 6
	codes := make(chan int, requests)
	for range requests {
		go func() {
			resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	waitUntil(t, func() bool { return open.Load() == 2 && rt.main.replicas[0].inflight.Load() == requests }) // 2 on the replica, 4 waiting
	close(release)
	for range requests {
		if c := <-codes; c != 200 {
			t.Fatalf("a request answered %d, want every one 200 after waiting for a connection", c)
		}
	}
	if conns.Load() != 2 || peak.Load() != 2 {
		t.Fatalf("%d connections, %d requests at once on the replica: want 2 and 2", conns.Load(), peak.Load())
	}

	block := make(chan struct{})
	defer close(block)
	slow, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { <-block })
	rt = New(testConfig(t, "--replicas", slow.URL, "--upstream-max-conns", "1", "--upstream-conn-wait", "50ms", "--upstream-timeout", "10s"))
	base = serve(t, rt)
	go http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{}`)) // holds the one connection
	waitUntil(t, func() bool { return rt.main.replicas[0].inflight.Load() == 1 })
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"ServiceUnavailableError"`) {
		t.Fatalf("waiting past --upstream-conn-wait: %d Retry-After %q %s; want a 503 OpenAI error with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if rt.main.replicas[0].down.Load() {
		t.Fatal("a saturated replica was marked down")
	}
	if got := metricSum(t, base, `inference_router_upstream_errors_total{kind="pool",pool="",replica="`+slow.URL+`"}`); got != 1 {
		t.Fatalf("pool errors %v, want 1", got)
	}
}

// waitUntil polls cond (every millisecond, for up to 10 s).
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}
