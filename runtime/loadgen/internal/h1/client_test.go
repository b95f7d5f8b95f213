package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/conntest"
)

func target(t *testing.T, rawURL string) *Target {
	t.Helper()
	tg, err := NewTarget(http.MethodPost, rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// get sends one request and reads its whole body.
func get(t *testing.T, c *Client, tg *Target, body string) (*Response, string) {
	t.Helper()
	resp, err := c.Do(context.Background(), tg, []Header{{"Content-Type", "application/json"}}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp, string(raw)
}

func TestContentLengthBodyAndKeepAliveReuse(t *testing.T) {
	var gotBody, gotType, gotHost string
	srv, conns := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		gotBody, gotType, gotHost = string(raw), r.Header.Get("Content-Type"), r.Host
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "11")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	c := New(Options{})
	defer c.Close()
	tg := target(t, srv.URL+"/v1/completions")
	for i := range 3 {
		resp, body := get(t, c, tg, fmt.Sprintf(`{"n":%d}`, i))
		if resp.StatusCode != 200 || body != `{"ok":true}` || resp.ContentType != "application/json" || resp.Close {
			t.Fatalf("response %d: %+v %q", i, resp, body)
		}
		if gotBody != fmt.Sprintf(`{"n":%d}`, i) || gotType != "application/json" || gotHost != strings.TrimPrefix(srv.URL, "http://") {
			t.Fatalf("server saw body %q type %q host %q", gotBody, gotType, gotHost)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 sequential requests used %d connections, want 1 (keep-alive)", n)
	}
	if n := c.IdleConns(); n != 1 {
		t.Errorf("%d idle connections after the requests, want 1", n)
	}
}

func TestChunkedBodyIsDecodedAndTheConnectionReused(t *testing.T) {
	srv, conns := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 5 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush() // each event its own chunk
		}
	})
	c := New(Options{})
	defer c.Close()
	tg := target(t, srv.URL)
	for range 2 {
		resp, body := get(t, c, tg, "{}")
		if want := "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n"; body != want || resp.ContentType != "text/event-stream" {
			t.Fatalf("body %q (type %q), want %q", body, resp.ContentType, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("2 chunked responses used %d connections, want 1", n)
	}
}

func TestConnectionCloseIsNotReused(t *testing.T) {
	srv, conns := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})
	c := New(Options{})
	defer c.Close()
	tg := target(t, srv.URL)
	for range 2 {
		if resp, body := get(t, c, tg, "{}"); !resp.Close || body != "bye" {
			t.Fatalf("%+v %q", resp, body)
		}
	}
	if n := conns.Load(); n != 2 || c.IdleConns() != 0 {
		t.Errorf("%d connections, %d idle; want 2 and 0", n, c.IdleConns())
	}
}

// A server that closes a keep-alive connection while it is idle: the next request notices
// before writing to it and dials a fresh one.
func TestServerClosingAnIdleConnection(t *testing.T) {
	srv, conns := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	c := New(Options{})
	defer c.Close()
	tg := target(t, srv.URL)
	get(t, c, tg, "{}")
	srv.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for { // wait until the close reached our end of the idle connection
		c.mu.Lock()
		cn := c.idle[tg.key][0]
		c.mu.Unlock()
		if !cn.alive() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's close never reached the idle connection")
		}
		time.Sleep(time.Millisecond)
	}
	if _, body := get(t, c, tg, "{}"); body != "ok" {
		t.Fatalf("body %q", body)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the closed one replaced)", n)
	}
}

// rawServer answers every connection with handle, so tests can send what no real server does.
func rawServer(t *testing.T, handle func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				go func() { <-done; c.Close() }()
				handle(c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() { close(done); l.Close(); wg.Wait() })
	return "http://" + l.Addr().String()
}

// readRequest reads one request's head and its Content-Length body.
func readRequest(br *bufio.Reader) error {
	req, err := http.ReadRequest(br)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

func TestMalformedResponsesAreClearErrors(t *testing.T) {
	cases := map[string]struct{ reply, want string }{
		"not HTTP":         {"SSH-2.0-OpenSSH\r\n\r\n", `malformed HTTP status line "SSH-2.0-OpenSSH"`},
		"no status code":   {"HTTP/1.1 OK\r\n\r\n", `malformed HTTP status line "HTTP/1.1 OK"`},
		"HTTP/2 preface":   {"HTTP/2 200\r\n\r\n", "malformed HTTP status line"},
		"header no colon":  {"HTTP/1.1 200 OK\r\nBroken header\r\n\r\n", `malformed HTTP header line "Broken header"`},
		"space in name":    {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "malformed HTTP header line"},
		"bad length":       {"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", `bad Content-Length "-3"`},
		"two lengths":      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc", `bad Content-Length "4"`},
		"gzip encoding":    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "unsupported Transfer-Encoding"},
		"closed mid-head":  {"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n", "unexpected EOF"},
		"closed, no reply": {"", "closed the connection before responding"},
		"line too long":    {"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 5000) + "\r\n\r\n", "response line longer than 4096 bytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				if readRequest(br) == nil {
					_, _ = io.WriteString(c, tc.reply)
				}
			})
			c := New(Options{})
			defer c.Close()
			_, err := c.Do(context.Background(), target(t, url), nil, []byte("{}"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if c.IdleConns() != 0 {
				t.Error("a connection that failed went back to the pool")
			}
		})
	}
}

func TestTruncatedBodiesFail(t *testing.T) {
	for name, reply := range map[string]string{
		"content-length": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"chunked":        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
		"bad chunk size": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				if readRequest(br) == nil {
					_, _ = io.WriteString(c, reply)
				}
			})
			c := New(Options{})
			defer c.Close()
			resp, err := c.Do(context.Background(), target(t, url), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(resp.Body); err == nil {
				t.Fatal("a truncated body read without an error")
			}
			resp.Body.Close()
			if c.IdleConns() != 0 {
				t.Error("a connection whose body failed went back to the pool")
			}
		})
	}
}

func TestBodyWithoutLengthRunsToTheClose(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(br) == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it")
		}
	})
	c := New(Options{})
	defer c.Close()
	resp, body := get(t, c, target(t, url), "{}")
	if body != "all of it" || !resp.Close || c.IdleConns() != 0 {
		t.Fatalf("%+v %q idle %d", resp, body, c.IdleConns())
	}
}

func TestContinueThenResponse(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(br) == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 100 Continue\r\nX-A: b\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	c := New(Options{})
	defer c.Close()
	if resp, body := get(t, c, target(t, url), "{}"); resp.StatusCode != 201 || body != "ok" {
		t.Fatalf("%+v %q", resp, body)
	}
}

// A server that takes the request and never answers: the context's deadline ends the wait.
func TestStalledServerHitsTheDeadline(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		_ = readRequest(br)
		_, _ = io.Copy(io.Discard, br) // until the client gives up
	})
	c := New(Options{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Do(ctx, target(t, url), nil, []byte("{}"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %s", took)
	}
	if c.IdleConns() != 0 {
		t.Error("the stalled connection went back to the pool")
	}
}

// goroutinesSettle waits until the goroutine count is back to at most want.
func goroutinesSettle(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want <= %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stalledStreamServer answers every request with one SSE event and then holds the stream open
// until the client goes or the test ends.
func stalledStreamServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv, _ := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	return srv
}

// Cancelling a request mid-stream unblocks its read at once and leaves no goroutine and no
// connection behind.
func TestCancelMidStream(t *testing.T) {
	srv := stalledStreamServer(t)
	c := New(Options{})
	tg := target(t, srv.URL)
	before := runtime.NumGoroutine()
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := c.Do(ctx, tg, nil, []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "data: first\n\n" {
			t.Fatalf("first read %q %v", buf[:n], err)
		}
		readErr := make(chan error, 1)
		go func() { _, err := resp.Body.Read(buf); readErr <- err }()
		cancel()
		select {
		case err := <-readErr:
			if err == nil {
				t.Fatal("the read after cancel succeeded")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("cancel did not unblock the read")
		}
		resp.Body.Close()
	}
	if c.IdleConns() != 0 {
		t.Error("a cancelled request's connection went back to the pool")
	}
	c.Close()
	goroutinesSettle(t, before) // the server's handlers end when their connections close
}

// A finished request's context ending later must not touch a connection the pool has reused.
func TestContextEndingAfterCloseLeavesThePooledConnectionAlone(t *testing.T) {
	srv, conns := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	c := New(Options{})
	defer c.Close()
	tg := target(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := c.Do(ctx, tg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	if _, body := get(t, c, tg, ""); body != "ok" || conns.Load() != 1 {
		t.Fatalf("body %q over %d connections", body, conns.Load())
	}
}

func TestTLSVerifiesTheServer(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	defer srv.Close()
	tg := target(t, srv.URL)

	untrusting := New(Options{})
	defer untrusting.Close()
	if _, err := untrusting.Do(context.Background(), tg, nil, nil); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a server outside the system roots was accepted: %v", err)
	}

	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c := New(Options{TLS: &tls.Config{RootCAs: roots}})
	defer c.Close()
	for range 2 {
		if _, body := get(t, c, tg, "{}"); body != "HTTP/1.1" {
			t.Fatalf("body %q", body)
		}
	}
	if c.IdleConns() != 1 {
		t.Errorf("%d idle TLS connections, want 1 (reused)", c.IdleConns())
	}
}

func TestHeaderInjectionIsRefused(t *testing.T) {
	var hits atomic.Int32
	srv, _ := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	c := New(Options{})
	defer c.Close()
	for _, h := range []Header{{"Authorization", "Bearer x\r\nX-Evil: 1"}, {"Bad Name", "v"}, {"", "v"}} {
		if _, err := c.Do(context.Background(), target(t, srv.URL), []Header{h}, nil); !errors.Is(err, ErrBadHeader) {
			t.Errorf("header %q: error %v, want ErrBadHeader", h.Name, err)
		}
	}
	if hits.Load() != 0 {
		t.Error("a request with a bad header was sent")
	}
}

func TestNewTargetRefusesWhatItCannotSend(t *testing.T) {
	for _, u := range []string{"ftp://h/x", "http:///nohost", "http://user:pw@h/x", "://bad"} {
		if _, err := NewTarget(http.MethodPost, u); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
	tg, err := NewTarget(http.MethodPost, "https://example.test/v1/chat?x=1")
	if err != nil {
		t.Fatal(err)
	}
	if tg.addr != "example.test:443" || tg.head != "POST /v1/chat?x=1 HTTP/1.1\r\nHost: example.test\r\n" || !tg.secure {
		t.Fatalf("%+v", tg)
	}
}

// Peek, Buffered and Discard see the body's bytes only, across chunk boundaries, and the
// connection goes back to the pool once they reach the end.
func TestPeekAndDiscardAcrossChunks(t *testing.T) {
	for name, reply := range map[string]string{
		"chunked":        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n2\r\nhi\r\n0\r\nX-Trailer: 1\r\n\r\n",
		"content-length": "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabcdefghi",
	} {
		t.Run(name, func(t *testing.T) {
			url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				for readRequest(br) == nil {
					_, _ = io.WriteString(c, reply)
				}
			})
			c := New(Options{})
			defer c.Close()
			resp, err := c.Do(context.Background(), target(t, url), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for {
				if resp.Body.Buffered() == 0 {
					if _, err := resp.Body.Peek(1); err == io.EOF {
						break
					} else if err != nil {
						t.Fatal(err)
					}
				}
				buf, err := resp.Body.Peek(resp.Body.Buffered())
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, buf...)
				if _, err := resp.Body.Discard(len(buf)); err != nil {
					t.Fatal(err)
				}
			}
			resp.Body.Close()
			if string(got) != "abcdefghi" || c.IdleConns() != 1 {
				t.Fatalf("read %q, %d idle connections", got, c.IdleConns())
			}
		})
	}
}

// raceServer answers every request, except that on its first connection it reads the second
// request and then ends the connection without a byte of response (closing it, or resetting it
// when reset is set): the keep-alive race, a server closing an idle connection just as a
// request is written on it. It counts connections and the requests it read.
func raceServer(t *testing.T, reset bool) (url string, conns, requests *atomic.Int32) {
	conns, requests = new(atomic.Int32), new(atomic.Int32)
	url = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		first := conns.Add(1) == 1
		for n := 1; ; n++ {
			if readRequest(br) != nil {
				return
			}
			requests.Add(1)
			if first && n == 2 {
				if reset {
					_ = c.(*net.TCPConn).SetLinger(0) // Close sends RST
				}
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
	return url, conns, requests
}

// A reused connection that ends before the first response byte is retried once on a fresh
// connection when net/http would: the method is idempotent or the request carries an
// Idempotency-Key; a plain POST is not resent (the server may have acted on it).
func TestReusedConnectionEndingBeforeTheResponse(t *testing.T) {
	cases := []struct {
		name    string
		method  string
		headers []Header
		reset   bool
		retried bool
	}{
		{"POST with Idempotency-Key, closed", http.MethodPost, []Header{{"idempotency-key", "k-2"}}, false, true},
		{"POST with X-Idempotency-Key, reset", http.MethodPost, []Header{{"X-Idempotency-Key", "k-2"}}, true, true},
		{"GET, closed", http.MethodGet, nil, false, true},
		{"GET, reset", http.MethodGet, nil, true, true},
		{"plain POST, closed", http.MethodPost, nil, false, false},
		{"plain POST, reset", http.MethodPost, nil, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, conns, requests := raceServer(t, tc.reset)
			c := New(Options{})
			defer c.Close()
			tg, err := NewTarget(tc.method, url)
			if err != nil {
				t.Fatal(err)
			}
			do := func() (string, error) {
				resp, err := c.Do(context.Background(), tg, tc.headers, []byte("{}"))
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				raw, err := io.ReadAll(resp.Body)
				return string(raw), err
			}
			if body, err := do(); err != nil || body != "ok" {
				t.Fatalf("first request: %q, %v", body, err)
			}
			body, err := do() // on the reused connection, which the server ends
			if tc.retried {
				if err != nil || body != "ok" {
					t.Fatalf("second request: %q, %v; want it resent on a fresh connection", body, err)
				}
				if n, r := conns.Load(), requests.Load(); n != 2 || r != 3 {
					t.Errorf("%d connections and %d requests at the server, want 2 and 3", n, r)
				}
				return
			}
			if err == nil {
				t.Fatalf("second request answered %q; want the connection's end as its error", body)
			}
			if !tc.reset && !errors.Is(err, errClosedBeforeResponse) {
				t.Errorf("error %v, want %v", err, errClosedBeforeResponse)
			}
			if n, r := conns.Load(), requests.Load(); n != 1 || r != 2 {
				t.Errorf("%d connections and %d requests at the server, want 1 and 2 (not resent)", n, r)
			}
		})
	}
}

// A fresh connection's failure is the answer, and so is one that ended after a response began.
func TestNoRetryOnAFreshConnectionOrAfterTheResponseBegan(t *testing.T) {
	var requests atomic.Int32
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(br) == nil {
			requests.Add(1)
		}
	})
	c := New(Options{})
	defer c.Close()
	tg, err := NewTarget(http.MethodGet, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(context.Background(), tg, nil, nil); !errors.Is(err, errClosedBeforeResponse) {
		t.Fatalf("error %v, want %v", err, errClosedBeforeResponse)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests at the server, want 1 (a fresh connection is not retried)", n)
	}

	var conns, begun atomic.Int32
	url = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		first := conns.Add(1) == 1
		for n := 1; readRequest(br) == nil; n++ {
			if first && n == 2 {
				begun.Add(1)
				_, _ = io.WriteString(c, "HTTP/1.1 20") // a response begun, then the end
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
	tg, err = NewTarget(http.MethodGet, url)
	if err != nil {
		t.Fatal(err)
	}
	get(t, c, tg, "")
	if _, err := c.Do(context.Background(), tg, nil, nil); err == nil {
		t.Fatal("a response cut off in its status line was answered")
	}
	if n := conns.Load(); n != 1 || begun.Load() != 1 {
		t.Errorf("%d connections, want 1 (a begun response is not retried)", n)
	}
}
