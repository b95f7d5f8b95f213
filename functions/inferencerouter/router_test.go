package inferencerouter

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func testConfig(t *testing.T, args ...string) Config {
	t.Helper()
	cfg, err := ParseConfig(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestParseConfigRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{},                               // no replicas
		{"--replicas", "ftp://x"},        // not http
		{"--replicas", "http://u:p@h:1"}, // credentials
		{"--replicas", "http://h:1", "--profile", "x"}, // unknown profile
		{"--profile", "pd", "--replicas", "http://h:1"},
		{"--profile", "precise-prefix", "--replicas", "http://h:1"}, // no zmq endpoint
		{"--replicas", "http://h:1", "--block-size", "0"},
		{"--replicas", "http://h:1", "--upstream-max-conns", "0"},
		{"--replicas", "http://h:1", "--upstream-max-conns", "100000"},
		{"--replicas", "http://h:1", "--upstream-conn-wait", "0s"},
		{"--replicas", "http://h:1", "--stream-write-timeout", "0s"},
		{"--replicas", strings.Repeat("http://h:1,", MaxReplicas+1)},
	} {
		if _, err := ParseConfig(args, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	// A replica URL with credentials is refused without the password in the error (it is logged).
	if _, err := ParseConfig([]string{"--replicas", "http://u:s3cret@h:1/?token=t0k"}, func(string) string { return "" }, io.Discard); err == nil ||
		strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "t0k") || !strings.Contains(err.Error(), "http://h:1") {
		t.Errorf("a replica URL with credentials: %v", err)
	}
	env := map[string]string{"ROUTER_REPLICAS": "http://a:1, http://b:2/", "ROUTER_PROFILE": "load", "PORT": "9000"}
	cfg, err := ParseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil || cfg.Port != 9000 || cfg.Profile != ProfileLoad || len(cfg.Replicas) != 2 || cfg.Replicas[1] != "http://b:2" {
		t.Fatalf("env config: %+v %v", cfg, err)
	}
}

func TestBlockIndexLongestPrefixAndLRU(t *testing.T) {
	x := newBlockIndex(4)
	x.add([]uint64{1, 2, 3}, 0)
	x.add([]uint64{1, 2}, 1)
	var m [MaxReplicas]int
	if got := x.match([]uint64{1, 2, 3, 9}, 0b11, m[:]); got != 3 || m[0] != 3 || m[1] != 2 {
		t.Fatalf("longest %d, matched %v", got, m[:2])
	}
	x.add([]uint64{7, 8}, 1) // capacity 4: evicts the least recently used, the chain's tail 3
	if x.len() != 4 {
		t.Fatalf("len %d", x.len())
	}
	m = [MaxReplicas]int{}
	if got := x.match([]uint64{1, 2, 3}, 0b11, m[:]); got != 2 {
		t.Fatalf("after eviction longest %d", got)
	}
	x.remove([]uint64{1}, 0)
	x.remove([]uint64{1}, 1)
	m = [MaxReplicas]int{}
	if got := x.match([]uint64{1, 2}, 0b11, m[:]); got != 0 {
		t.Fatalf("after removal longest %d", got)
	}
	x.clear(1)
	if x.len() != 1 { // block 2 was held by 0 and 1; 7, 8 only by 1
		t.Fatalf("after clear len %d", x.len())
	}
}

// fakeReplicas are httptest servers that record which one served a request.
func fakeReplicas(t *testing.T, n int) ([]string, *[]int, *sync.Mutex) {
	var mu sync.Mutex
	var served []int
	var urls []string
	for i := range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			mu.Lock()
			served = append(served, i)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls, &served, &mu
}

// answer is a router response read back in memory.
type answer struct {
	Code   int
	header http.Header
	Body   *bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

// post runs one request through the router's handler in memory (the
// server in front of it is exercised by serve and the sim tests).
func post(t *testing.T, rt *Router, path, body string) *answer {
	t.Helper()
	var req fasthttp.Request
	req.Header.SetMethod(http.MethodPost)
	req.SetRequestURI(path)
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	rt.handle(&ctx)
	a := &answer{Code: ctx.Response.StatusCode(), header: http.Header{}, Body: bytes.NewBuffer(append([]byte(nil), ctx.Response.Body()...))}
	for k, v := range ctx.Response.Header.All() {
		a.header.Add(string(k), string(v))
	}
	return a
}

// serve runs rt's server on a loopback listener and returns its base URL.
func serve(t *testing.T, rt *Router) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rt.server(io.Discard)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

func chat(prefix string, i int) string {
	return `{"model":"m","messages":[{"role":"system","content":"` + prefix + `"},{"role":"user","content":"question ` + strings.Repeat("x", i) + `"}]}`
}

func TestRandomIsDeterministicWithASeed(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 4)
	picks := func() []string {
		rt := New(testConfig(t, "--replicas", strings.Join(urls, ","), "--seed", "42"))
		var out []string
		for range 20 {
			out = append(out, post(t, rt, "/v1/chat/completions", chat("p", 1)).Header().Get("X-Inference-Router-Replica"))
		}
		return out
	}
	a, b := picks(), picks()
	if strings.Join(a, " ") != strings.Join(b, " ") {
		t.Fatalf("same seed, different picks:\n%v\n%v", a, b)
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	if len(seen) < 3 {
		t.Fatalf("20 random picks over 4 replicas hit only %v", seen)
	}
}

func TestLoadPicksTheLeastLoaded(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 3)
	rt := New(testConfig(t, "--replicas", strings.Join(urls, ","), "--profile", "load", "--seed", "1"))
	rt.main.replicas[0].inflight.Store(5)
	rt.main.replicas[1].waiting.Store(2) // scraped queue counts as load
	rt.main.replicas[2].inflight.Store(1)
	for range 5 {
		if got := post(t, rt, "/v1/completions", `{"model":"m","prompt":"hi"}`).Header().Get("X-Inference-Router-Replica"); got != urls[2] {
			t.Fatalf("picked %s, want the least loaded %s", got, urls[2])
		}
	}
}

func TestPrefixAffinitySendsASharedPrefixToOneReplica(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 4)
	rt := New(testConfig(t, "--replicas", strings.Join(urls, ","), "--profile", "prefix-affinity", "--seed", "3"))
	long := strings.Repeat("You are a helpful assistant. ", 20)
	first := post(t, rt, "/v1/chat/completions", chat(long, 0)).Header().Get("X-Inference-Router-Replica")
	for i := 1; i < 10; i++ {
		if got := post(t, rt, "/v1/chat/completions", chat(long, i)).Header().Get("X-Inference-Router-Replica"); got != first {
			t.Fatalf("request %d with the shared prefix went to %s, the first to %s", i, got, first)
		}
	}
	// a different prefix is free to go elsewhere: with the first replica busy it does
	for _, r := range rt.main.replicas {
		if r.base == first {
			r.inflight.Store(10)
		}
	}
	if got := post(t, rt, "/v1/chat/completions", chat(strings.Repeat("Other system prompt. ", 20), 0)).Header().Get("X-Inference-Router-Replica"); got == first {
		t.Fatalf("an unseen prefix went to the busy replica %s", got)
	}
}

func TestOptimizedDropsSaturatedReplicas(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 2)
	rt := New(testConfig(t, "--replicas", strings.Join(urls, ","), "--profile", "optimized", "--saturation-queue", "4", "--seed", "5"))
	long := strings.Repeat("shared prefix text ", 30)
	first := post(t, rt, "/v1/chat/completions", chat(long, 0)).Header().Get("X-Inference-Router-Replica")
	if got := post(t, rt, "/v1/chat/completions", chat(long, 1)).Header().Get("X-Inference-Router-Replica"); got != first {
		t.Fatalf("prefix hit not preferred: %s then %s", first, got)
	}
	for _, r := range rt.main.replicas {
		if r.base == first {
			r.waiting.Store(5) // over the threshold
		}
	}
	if got := post(t, rt, "/v1/chat/completions", chat(long, 2)).Header().Get("X-Inference-Router-Replica"); got == first {
		t.Fatalf("saturated replica %s still chosen", got)
	}
}

func TestDeadReplicaIsSkippedAndComesBack(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 1)
	ln := httptest.NewUnstartedServer(nil)
	dead := "http://" + ln.Listener.Addr().String()
	ln.Listener.Close() // nothing listens there: connections are refused
	rt := New(testConfig(t, "--replicas", dead+","+urls[0], "--seed", "7"))
	for range 10 {
		rec := post(t, rt, "/v1/completions", `{"model":"m","prompt":"hi"}`)
		if rec.Code != 200 || rec.Header().Get("X-Inference-Router-Replica") != urls[0] {
			t.Fatalf("status %d from %q", rec.Code, rec.Header().Get("X-Inference-Router-Replica"))
		}
	}
	if !rt.main.replicas[0].down.Load() {
		t.Fatal("the refusing replica is not marked down")
	}
	rec := post(t, rt, "/balanced/v1/completions", `{}`)
	if rec.Code != 200 {
		t.Fatalf("balanced with a dead replica: %d", rec.Code)
	}
}

func TestBodyBoundAndErrors(t *testing.T) {
	urls, _, _ := fakeReplicas(t, 1)
	rt := New(testConfig(t, "--replicas", urls[0], "--profile", "prefix-affinity", "--max-request-body-size-mb", "1"))
	if rec := post(t, rt, "/v1/chat/completions", `{"messages":"`+strings.Repeat("a", 2<<20)+`"}`); rec.Code != 413 || !strings.Contains(rec.Body.String(), `"error"`) {
		t.Fatalf("oversized body: %d %s", rec.Code, rec.Body.String()[:min(200, rec.Body.Len())])
	}
	if rec := post(t, rt, "/v1/chat/completions", `{not json`); rec.Code != 400 || !strings.Contains(rec.Body.String(), "BadRequestError") {
		t.Fatalf("bad json: %d %s", rec.Code, rec.Body.String())
	}
	if rec := post(t, rt, "/nope", `{}`); rec.Code != 404 {
		t.Fatalf("unknown path: %d", rec.Code)
	}
}

func TestDecodeKVBatchBothFormats(t *testing.T) {
	// [ts, [["BlockStored",[1,2],0,[5,6],16,nil,"GPU",nil], ["BlockRemoved",[2],"GPU"], ["AllBlocksCleared"]], 0]
	b := []byte{0x93, 0xcb}
	b = binary.BigEndian.AppendUint64(b, 0)
	b = append(b, 0x93)
	b = append(b, 0x98, 0xab)
	b = append(b, "BlockStored"...)
	b = append(b, 0x92, 0x01, 0xcf)
	b = binary.BigEndian.AppendUint64(b, 1<<63+5)
	b = append(b, 0x00, 0x92, 0x05, 0x06, 0x10, 0xc0, 0xa3, 'G', 'P', 'U', 0xc0)
	b = append(b, 0x93, 0xac)
	b = append(b, "BlockRemoved"...)
	b = append(b, 0x91, 0x02, 0xa3, 'G', 'P', 'U')
	b = append(b, 0x91, 0xb0)
	b = append(b, "AllBlocksCleared"...)
	b = append(b, 0x00)
	ev, err := decodeKVBatch(b)
	if err != nil || len(ev) != 3 || ev[0].kind != "BlockStored" || ev[0].hashes[1] != 1<<63+5 || ev[1].kind != "BlockRemoved" || ev[1].hashes[0] != 2 || ev[2].kind != "AllBlocksCleared" {
		t.Fatalf("%+v %v", ev, err)
	}
	// map format: {"type":"BlockRemoved","block_hashes":[3],"medium":"GPU"}
	m := []byte{0x93, 0x00, 0x91, 0x83, 0xa4}
	m = append(m, "type"...)
	m = append(m, 0xac)
	m = append(m, "BlockRemoved"...)
	m = append(m, 0xac)
	m = append(m, "block_hashes"...)
	m = append(m, 0x91, 0x03, 0xa6)
	m = append(m, "medium"...)
	m = append(m, 0xa3, 'G', 'P', 'U', 0x00)
	ev, err = decodeKVBatch(m)
	if err != nil || len(ev) != 1 || ev[0].kind != "BlockRemoved" || ev[0].hashes[0] != 3 {
		t.Fatalf("map format: %+v %v", ev, err)
	}
	for i := range b { // every truncation is an error, never a panic
		if _, err := decodeKVBatch(b[:i]); err == nil {
			t.Fatalf("truncated at %d accepted", i)
		}
	}
}

func TestParseQueueGauges(t *testing.T) {
	page := "# HELP x\nvllm:num_requests_waiting{model_name=\"m\"} 3\nvllm:num_requests_waiting_by_reason{r=\"a\"} 99\nvllm:num_requests_running{model_name=\"m\"} 2\nvllm:num_requests_running{model_name=\"lora\"} 1 1700000000\n"
	w, r, ok := parseQueueGauges(strings.NewReader(page))
	if !ok || w != 3 || r != 3 {
		t.Fatalf("waiting %d running %d ok %v", w, r, ok)
	}
}

// The fast prompt reader gives exactly the slow path's bytes wherever it
// answers, and declines what it does not handle.
func TestFastPromptTextMatchesTheSlowPath(t *testing.T) {
	for _, body := range []string{
		chat("system words", 3),
		`{"model":"m","messages":[{"role":"user","content":"a","name":"x"}],"max_tokens":3}`,
		`{"model":"m","prompt":"plain prompt"}`,
		`{"model":"m","input":"responses input","prompt":null}`,
		`{"messages":[{"role":"user","content":"tab\tescaped"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"parts"}]}]}`,
		`{"prompt":[1,2,3]}`,
		`{"messages":[],"prompt":"p"}`,
		`{"a":1,"a":2}`,
		`{}`,
	} {
		fast, ok := fastPromptText(nil, []byte(body))
		req, err := peekPrompt([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if slow := req.appendPromptText(nil); ok && string(fast) != string(slow) {
			t.Errorf("%s: fast %q, slow %q", body, fast, slow)
		}
	}
	for _, bad := range []string{`{"messages":[{"role":"user","content":"x"}]`, `{"messages":1}x`, `[1]`} {
		if _, ok := fastPromptText(nil, []byte(bad)); ok {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// Each SSE chunk reaches the client before the replica writes the next.
func TestStreamsAreFlushedPerChunk(t *testing.T) {
	next := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		<-next // the client must have the first chunk before the second exists
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer upstream.Close()
	router := serve(t, New(testConfig(t, "--replicas", upstream.URL)))
	client := &http.Client{Timeout: 10 * time.Second} // an unflushed first chunk fails here, not by hanging
	resp, err := client.Post(router+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: {\"n\":1}\n\n" {
		t.Fatalf("first chunk %q %v", buf[:n], err)
	}
	close(next)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "data: [DONE]\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

// A replica marked down is probed and taken back once it answers.
func TestDownReplicaComesBackWhenItAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := testConfig(t, "--replicas", "http://"+addr, "--health-interval", "20ms", "--scrape-interval", "0")
	rt := New(cfg)
	stop, err := rt.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if rec := post(t, rt, "/v1/completions", `{}`); rec.Code != 503 {
		t.Fatalf("only replica refusing: %d", rec.Code)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })}
	go srv.Serve(ln)
	defer srv.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rt.main.replicas[0].down.Load() {
		if time.Now().After(deadline) {
			t.Fatal("replica never came back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rec := post(t, rt, "/v1/completions", `{}`); rec.Code != 200 {
		t.Fatalf("after recovery: %d", rec.Code)
	}
}

// The client's headers reach the replica (Authorization included, Host the
// replica's own), hop-by-hop ones in either direction do not, the query
// string goes along, and the replica's headers come back with the
// router's X-Inference-Router-Replica: through the real server and client.
func TestHeadersPassThroughExceptHopByHop(t *testing.T) {
	type seen struct {
		header http.Header
		host   string
		query  string
	}
	got := make(chan seen, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Clone(), r.Host, r.URL.RawQuery}
		w.Header().Set("X-Replica-Says", "hello")
		w.Header().Set("Keep-Alive", "timeout=3")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer upstream.Close()
	router := serve(t, New(testConfig(t, "--replicas", upstream.URL)))
	req, _ := http.NewRequest(http.MethodGet, router+"/v1/models?limit=2", nil)
	req.Header.Set("Authorization", "Bearer sk-user")
	req.Header.Set("X-Request-Id", "r-1")
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("Keep-Alive", "timeout=5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := <-got
	if s.header.Get("Authorization") != "Bearer sk-user" || s.header.Get("X-Request-Id") != "r-1" {
		t.Fatalf("the replica got headers %v", s.header)
	}
	if s.header.Get("Proxy-Authorization") != "" || s.header.Get("Keep-Alive") != "" {
		t.Fatalf("hop-by-hop headers reached the replica: %v", s.header)
	}
	if s.host != strings.TrimPrefix(upstream.URL, "http://") || s.query != "limit=2" {
		t.Fatalf("the replica saw Host %q, query %q", s.host, s.query)
	}
	if resp.StatusCode != 200 || string(body) != `{"object":"list","data":[]}` || resp.Header.Get("X-Replica-Says") != "hello" ||
		resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Inference-Router-Replica") != upstream.URL {
		t.Fatalf("the client got %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if resp.Header.Get("Keep-Alive") != "" {
		t.Fatalf("the replica's Keep-Alive reached the client: %v", resp.Header)
	}
}

// The proxy's hot path allocates nothing of its own per request: under the
// profiles that do not read the prompt, and under the prefix ones for a
// prompt whose blocks the index already holds (the net/http router
// allocated 51-56 objects per request: request and header maps, the
// Transport's request, context and timer, the body buffer, the prompt
// text and hashes).
func TestHotPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, profile := range []string{"random", "load", "prefix-affinity", "optimized"} {
		rt, ctx := cannedRouter(t, profile, 2)
		body := []byte(`{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("a shared system prompt ", 40) + `"},{"role":"user","content":"hello"}]}`)
		out := io.Discard
		allocs := testing.AllocsPerRun(200, func() {
			ctx.Request.Reset()
			ctx.Request.Header.SetMethod(http.MethodPost)
			ctx.Request.SetRequestURI("/v1/chat/completions")
			ctx.Request.Header.SetContentType("application/json")
			ctx.Request.SetBodyRaw(body)
			ctx.Response.Reset()
			rt.handle(ctx)
			if ctx.Response.StatusCode() != 200 {
				t.Fatal(ctx.Response.StatusCode())
			}
			if _, err := ctx.Response.WriteTo(out); err != nil {
				t.Fatal(err)
			}
		})
		// one: the canned upstream's own strings.Reader
		if allocs > 1 {
			t.Errorf("%s: %.1f allocations per request, want at most 1 (the canned upstream's reader)", profile, allocs)
		}
	}
}

// A multipart body (an audio upload) reaches the replica byte for byte,
// with its boundary: the router relays it, it does not parse it as a form.
func TestMultipartBodyIsRelayedAsBytes(t *testing.T) {
	got := make(chan string, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Header.Get("Content-Type") + "\n" + string(b)
		io.WriteString(w, `{"text":"hi"}`)
	}))
	defer upstream.Close()
	router := serve(t, New(testConfig(t, "--replicas", upstream.URL)))
	body := "--b0undary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF....\r\n--b0undary--\r\n"
	resp, err := http.Post(router+"/v1/audio/transcriptions", "multipart/form-data; boundary=b0undary", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := <-got; s != "multipart/form-data; boundary=b0undary\n"+body || resp.StatusCode != 200 {
		t.Fatalf("the replica got %q (status %d)", s, resp.StatusCode)
	}
}
