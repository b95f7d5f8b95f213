package loadgen_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// transports runs f on the engine's default (lean) client and on net/http's.
func transports(t *testing.T, f func(t *testing.T, client *http.Client)) {
	t.Run("lean", func(t *testing.T) { f(t, nil) })
	t.Run("net/http", func(t *testing.T) {
		c := loadgen.NewHTTPClient()
		defer c.CloseIdleConnections()
		f(t, c)
	})
}

func one() []loadgen.Request {
	return []loadgen.Request{{ArrivalMs: f64(0), InputTokens: 4, OutputTokens: 2}}
}

// Redirects come out the same on both transports: 307/308 resend the POST, 301/302/303 (which a
// client would follow as a GET without the body) fail the request saying so, the key does not
// follow to another origin (another port of the same host included), a loop stops after 10.
func TestRedirectsAreRecordedAsNetHTTPRecordsThem(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 2}
	backend := fake.start(t)
	var authOnOtherHost atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authOnOtherHost.Store(r.Header.Get("Authorization"))
		http.Redirect(w, r, backend.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer other.Close()
	var followedAsGET atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/temp/"):
			http.Redirect(w, r, backend.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/perm/"):
			http.Redirect(w, r, "/temp/v1/chat/completions", http.StatusPermanentRedirect)
		case strings.HasPrefix(r.URL.Path, "/found/"):
			http.Redirect(w, r, "/method", http.StatusFound)
		case r.URL.Path == "/method":
			followedAsGET.Add(1)
			http.Error(w, `{"error":{"message":"got `+r.Method+`"}}`, http.StatusMethodNotAllowed)
		case strings.HasPrefix(r.URL.Path, "/loop/"):
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/nowhere/"):
			w.WriteHeader(http.StatusFound) // no Location: the response itself
		case strings.HasPrefix(r.URL.Path, "/other/"):
			http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/x", http.StatusTemporaryRedirect)
		}
	}))
	defer front.Close()
	cases := []struct{ prefix, wantErr string }{
		{"/temp", ""},
		{"/perm", ""},
		{"/found", "turns the POST into a GET"},
		{"/loop", "stopped after 10 redirects"},
		{"/nowhere", "HTTP 302"},
		{"/other", ""},
	}
	transports(t, func(t *testing.T, client *http.Client) {
		fake.mu.Lock()
		fake.seen = nil
		fake.mu.Unlock()
		for _, tc := range cases {
			cfg := baseConfig(front.URL + tc.prefix)
			cfg.Client, cfg.APIKey = client, "k-123"
			recs, _ := run(t, cfg, one())
			r := recs[0]
			switch {
			case tc.wantErr == "" && !r.Successful:
				t.Errorf("%s: %+v", tc.prefix, r)
				if r.Error != nil {
					t.Errorf("%s: error %s", tc.prefix, *r.Error)
				}
			case tc.wantErr != "" && (r.Error == nil || !strings.Contains(*r.Error, tc.wantErr)):
				got := "<nil>"
				if r.Error != nil {
					got = *r.Error
				}
				t.Errorf("%s: error %q, want one containing %q", tc.prefix, got, tc.wantErr)
			}
		}
		if a, _ := authOnOtherHost.Load().(string); a != "" {
			t.Errorf("the key followed a redirect to another host: %q", a)
		}
		// The first request the backend saw came through /temp: another port of the same host,
		// so another origin, which gets no key.
		if got := fake.requests(); len(got) == 0 || got[0].Header.Get("Authorization") != "" {
			t.Error("the key followed a redirect to another port of the same host")
		}
		if n := followedAsGET.Load(); n != 0 {
			t.Errorf("a 302 was followed with a GET %d times", n)
		}
	})
	// A caller's client whose own policy follows a 302 as a GET (the egress policy's): its
	// answer is not counted either.
	cfg := baseConfig(front.URL + "/found")
	cfg.Client = egress.New(egress.Rules{}).Client(0)
	recs, _ := run(t, cfg, one())
	if r := recs[0]; r.Successful || r.Error == nil || !strings.Contains(*r.Error, "turns the POST into a GET") {
		t.Errorf("a POST a caller's client followed as a GET: %+v", r)
	}
}

// rawOpenAI answers every request on a connection with reply, whatever it asked.
func rawOpenAI(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				if _, err := c.Read(buf); err == nil {
					_, _ = io.WriteString(c, reply)
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return "http://" + l.Addr().String()
}

func TestMalformedResponsesAreRecordedClearly(t *testing.T) {
	for reply, want := range map[string]string{
		"BOGUS 200\r\n\r\n":                            `transport: malformed HTTP status line "BOGUS 200"`,
		"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n":     `transport: malformed HTTP header line "no colon here"`,
		"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n": `transport: bad Content-Length "x"`,
	} {
		recs, _ := run(t, baseConfig(rawOpenAI(t, reply)), one())
		if r := recs[0]; r.Successful || r.Error == nil || *r.Error != want {
			t.Errorf("reply %q: record %+v, want error %q", reply, r, want)
			if r.Error != nil {
				t.Logf("error: %s", *r.Error)
			}
		}
	}
}

// A server that accepts the request and never answers: RequestTimeout ends it with a timeout
// record, and nothing of the request stays behind.
func TestStalledServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	before := runtime.NumGoroutine()
	cfg := baseConfig(srv.URL)
	cfg.RequestTimeout = 150 * time.Millisecond
	recs, _ := run(t, cfg, one())
	if r := recs[0]; r.Error == nil || !strings.Contains(*r.Error, "timeout: no complete response within 150ms") {
		t.Fatalf("record %+v", r)
	}
	expectGoroutinesBackTo(t, before)
}

// Stopping a run while every request is mid-stream ends each at once with no goroutine left.
func TestCancelMidStreamLeavesNoGoroutine(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 1000, ITL: 20 * time.Millisecond}
	srv := fake.start(t)
	before := runtime.NumGoroutine()
	cfg := baseConfig(srv.URL)
	progress := &loadgen.Progress{}
	cfg.Progress = progress
	schedule := make([]loadgen.Request, 50)
	for i := range schedule {
		schedule[i] = loadgen.Request{ArrivalMs: f64(0), InputTokens: 4, OutputTokens: 1000}
	}
	ctx, cancel := context.WithCancel(context.Background())
	sink := &memSink{}
	done := make(chan error, 1)
	go func() { _, err := loadgen.Run(ctx, cfg, schedule, sink); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for progress.Snapshot().InFlight < 50 || len(fake.requests()) < 50 {
		if time.Now().After(deadline) {
			t.Fatal("the requests never were all in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a few tokens each
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not stop within 5 s of the cancel")
	}
	for _, r := range sink.byID() {
		if r.Successful || r.Error == nil || !strings.Contains(*r.Error, "cancelled") {
			t.Fatalf("record %+v", r)
		}
	}
	srv.CloseClientConnections()
	expectGoroutinesBackTo(t, before)
}

func TestTLSEndpoint(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 3}
	srv := httptest.NewUnstartedServer(fake)
	srv.StartTLS()
	defer srv.Close()
	cfg := baseConfig(srv.URL)
	recs, _ := run(t, cfg, one())
	if r := recs[0]; r.Successful || r.Error == nil || !strings.Contains(*r.Error, "certificate") {
		t.Fatalf("a server no root vouches for was trusted: %+v", r)
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	cfg.TLSConfig = &tls.Config{RootCAs: roots}
	schedule := []loadgen.Request{{SessionID: "s", Turn: 0, OutputTokens: 3}, {SessionID: "s", Turn: 1, OutputTokens: 3}}
	recs, _ = run(t, cfg, schedule)
	for _, r := range recs {
		if !r.Successful || r.OutputTokens != 3 {
			t.Fatalf("record %+v", r)
		}
	}
	if got := fake.requests(); len(got) != 2 || got[0].Header.Get("Accept") != "text/event-stream" {
		t.Fatalf("server saw %+v", got)
	}
}

// An API key that would inject a header is refused, not sent.
func TestAKeyWithALineBreakIsNotSent(t *testing.T) {
	fake := &fakeOpenAI{}
	cfg := baseConfig(fake.start(t).URL)
	cfg.APIKey = "k\r\nX-Injected: 1"
	recs, _ := run(t, cfg, one())
	if r := recs[0]; r.Successful || r.Error == nil || strings.Contains(*r.Error, "X-Injected") || len(fake.requests()) != 0 {
		t.Fatalf("record %+v, server saw %d requests", r, len(fake.requests()))
	}
}

// An SSE stream whose events and lines are split across chunks (as a proxy may re-chunk it)
// is read event by event from the connection's buffer.
func TestStreamSplitAcrossChunks(t *testing.T) {
	events := `data: {"choices":[{"delta":{"content":"a"}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}` + "\n\n" +
		"data: [DONE]\n\n"
	var chunked strings.Builder
	for rest := events; rest != ""; {
		n := min(7, len(rest))
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	chunked.WriteString("0\r\n\r\n")
	url := rawOpenAI(t, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked.String())
	recs, _ := run(t, baseConfig(url), one())
	if r := recs[0]; !r.Successful || r.OutputTokens != 2 || r.TTFTMs == nil {
		t.Fatalf("record %+v", r)
	}
}

// A request's timeout is recorded as such on both transports, whether it comes before the
// response's head or mid-stream, and a run that ends before a request's timeout records the
// run's end, not a timeout.
func TestRequestTimeoutAndRunEndAreRecordedOnBothTransports(t *testing.T) {
	midStream := (&fakeOpenAI{TTFT: 5 * time.Second}).start(t) // the head and role chunk, then nothing
	release := make(chan struct{})
	beforeHead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the server notices a client's close only once the body is read
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer beforeHead.Close()
	defer close(release)
	transports(t, func(t *testing.T, client *http.Client) {
		for _, tc := range []struct {
			name, url   string
			timeout     time.Duration
			duration    time.Duration
			wantErr     string
			wantHasCode bool
		}{
			{"timeout before the head", beforeHead.URL, 100 * time.Millisecond, 0, "timeout: no complete response within 100ms", false},
			{"timeout mid-stream", midStream.URL, 100 * time.Millisecond, 0, "timeout: no complete response within 100ms", true},
			{"the run ends first", midStream.URL, 10 * time.Second, 100 * time.Millisecond, "cancelled: the run ended", true},
		} {
			cfg := baseConfig(tc.url)
			cfg.Client, cfg.RequestTimeout, cfg.Duration = client, tc.timeout, tc.duration
			began := time.Now()
			recs, _ := run(t, cfg, one())
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("%s: the request ended after %s", tc.name, took)
			}
			r := recs[0]
			if r.Successful || r.Error == nil || !strings.Contains(*r.Error, tc.wantErr) || (r.StatusCode != nil) != tc.wantHasCode {
				t.Errorf("%s: record %+v, want error %q", tc.name, r, tc.wantErr)
				if r.Error != nil {
					t.Logf("error: %s", *r.Error)
				}
			}
		}
	})
}
