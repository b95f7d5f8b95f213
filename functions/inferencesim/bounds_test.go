package inferencesim

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// The resource bounds of issue 9, each through HTTP against a running
// simulator: a hostile request gets an OpenAI-style 400 (or a bounded
// answer) instead of exhausting the process.

// openAIError decodes an error body and checks its shape and status.
func openAIError(t testing.TB, status int, body string, wantStatus int, wantParam string) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    int     `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || status != wantStatus || e.Error.Code != wantStatus || e.Error.Message == "" {
		t.Fatalf("want an OpenAI error %d, got %d %.300s", wantStatus, status, body)
	}
	if wantParam != "" && (e.Error.Param == nil || *e.Error.Param != wantParam) {
		t.Fatalf("want param %q: %s", wantParam, body)
	}
	return e.Error.Message
}

func repeatJSON(item string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func TestEmbeddingsInputsTimesDimensionsBounded(t *testing.T) {
	ts := startSim(t)
	url := ts.url() + "/v1/embeddings"
	// 64 x 65536 values is 4 Mi floats (~50 MB of JSON): refused before any is computed.
	s, _, body := post(t, url, `{"model":"fake-model","dimensions":65536,"input":`+repeatJSON(`"a"`, 64)+`}`)
	if msg := openAIError(t, s, body, 400, "input"); !strings.Contains(msg, "inputs x dimensions") {
		t.Fatalf("message does not name the bound: %s", msg)
	}
	// The request: 100,000 inputs with dimensions 65536.
	s, _, body = post(t, url, `{"model":"fake-model","dimensions":65536,"input":`+repeatJSON(`"x"`, 100000)+`}`)
	openAIError(t, s, body, 400, "input")
	// More inputs than OpenAI allows, at the default dimensions.
	s, _, body = post(t, url, `{"model":"fake-model","input":`+repeatJSON(`[1,2]`, limits.MaxEmbeddingInputs+1)+`}`)
	openAIError(t, s, body, 400, "input")
	// Within the bounds: answered in full.
	s, _, body = post(t, url, `{"model":"fake-model","dimensions":65536,"input":["a","b"],"encoding_format":"base64"}`)
	var ok struct {
		Data []struct{ Embedding string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &ok); s != 200 || err != nil || len(ok.Data) != 2 {
		t.Fatalf("embeddings within the bound: %d %.200s", s, body)
	}
}

func TestCompletionPromptsTimesNBounded(t *testing.T) {
	ts := startSim(t)
	url := ts.url() + "/v1/completions"
	s, _, body := post(t, url, `{"model":"fake-model","max_tokens":1,"prompt":`+repeatJSON(`"hi"`, 100000)+`}`)
	openAIError(t, s, body, 400, "prompt")
	s, _, body = post(t, url, `{"model":"fake-model","max_tokens":1,"prompt":`+repeatJSON(`[1]`, limits.MaxSequences+1)+`}`)
	openAIError(t, s, body, 400, "prompt")
	// Two prompts with n 100 are 200 sequences: the n cap cannot be bypassed.
	s, _, body = post(t, url, `{"model":"fake-model","max_tokens":1,"n":100,"prompt":["a","b"]}`)
	if msg := openAIError(t, s, body, 400, "n"); !strings.Contains(msg, "2 x 100") {
		t.Fatalf("message: %s", msg)
	}
	s, _, body = post(t, url, `{"model":"fake-model","max_tokens":1,"n":64,"prompt":["a","b"]}`)
	if s != 200 || strings.Count(body, `"index":`) != 128 {
		t.Fatalf("128 sequences are allowed: %d %.200s", s, body)
	}
}

func TestGeneratedTokensBounded(t *testing.T) {
	ts := startSim(t, "--max-model-len", "262144")
	chat := func(extra string) (int, string) {
		s, _, body := post(t, ts.url()+"/v1/chat/completions",
			`{"model":"fake-model","messages":[{"role":"user","content":"hi"}]`+extra+`}`)
		return s, body
	}
	// 128 x 200,000 tokens with ignore_eos would be 25.6 M tokens held at once.
	s, body := chat(`,"n":128,"max_tokens":200000,"ignore_eos":true`)
	openAIError(t, s, body, 400, "max_tokens")
	// Logprobs weigh: 16 x 1,000 tokens with 20 alternatives each (16,000 x 41 units).
	s, body = chat(`,"n":16,"max_tokens":1000,"logprobs":true,"top_logprobs":20`)
	openAIError(t, s, body, 400, "max_tokens")
	// One long answer of the whole context is fine.
	if s, body = chat(`,"max_tokens":100000`); s != 200 {
		t.Fatalf("a single 100k-token answer: %d %.200s", s, body)
	}
}

// TestToolArgumentsBounded: a schema's minItems cannot make the simulator
// build a billion-element array; arguments are cut at max_tokens.
func TestToolArgumentsBounded(t *testing.T) {
	ts := startSim(t)
	tools := func(minItems int) string {
		return `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":` +
			`{"a":{"type":"array","minItems":` + strconv.Itoa(minItems) + `,"items":{"type":"array","minItems":` + strconv.Itoa(minItems) +
			`,"items":{"type":"integer"}}}},"required":["a"]}}}],"tool_choice":"required"`
	}
	for _, minItems := range []int{5000, 1000000000} {
		for _, stream := range []bool{false, true} {
			req := `{"model":"fake-model","messages":[{"role":"user","content":"x"}],"max_tokens":50,"stream":` +
				strconv.FormatBool(stream) + `,"stream_options":{"include_usage":true},` + tools(minItems) + `}`
			start := time.Now()
			s, _, body := post(t, ts.url()+"/v1/chat/completions", req)
			if s != 200 || len(body) > 64<<10 {
				t.Fatalf("minItems %d stream %v: %d, %d bytes", minItems, stream, s, len(body))
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("minItems %d took %v", minItems, took)
			}
			if !strings.Contains(body, `"completion_tokens":50,`) || !strings.Contains(body, `"finish_reason":"length"`) {
				t.Fatalf("arguments must stop at max_tokens (50) with finish_reason length: %.600s", body)
			}
		}
	}
	// A small schema within max_tokens is a complete call, as before.
	s, _, body := post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model","messages":[{"role":"user","content":"x"}],"max_tokens":200,`+tools(1)+`}`)
	if s != 200 || !strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Fatalf("small tool call: %d %s", s, body)
	}
}

// TestJSONShapeBounded: containers per array and nesting depth are
// refused before encoding/json expands them.
func TestJSONShapeBounded(t *testing.T) {
	ts := startSim(t)
	s, _, body := post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model","messages":`+repeatJSON(`{}`, openai.MaxJSONContainers+1)+`}`)
	openAIError(t, s, body, 400, "")
	deep := strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/tokenize", "/admin/config"} {
		s, _, body := post(t, ts.url()+path, `{"model":"fake-model","x":`+deep+`}`)
		openAIError(t, s, body, 400, "")
	}
}

func TestSamplingParamsAndRolesAsVLLM(t *testing.T) {
	ts := startSim(t)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	toolsField := `,"tools":[{"type":"function","function":{"name":"f"}}]` // forces the general decoder
	for _, tc := range []struct{ extra, param string }{
		{`"temperature":-0.5`, "temperature"}, {`"top_p":1.5`, "top_p"}, {`"top_p":0`, "top_p"}, {`"top_p":-1`, "top_p"},
	} {
		for _, tail := range []string{"", toolsField} {
			s, _, body := post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model",`+msgs+`,`+tc.extra+tail+`}`)
			openAIError(t, s, body, 400, tc.param)
		}
		s, _, body := post(t, ts.url()+"/v1/completions", `{"model":"fake-model","prompt":"hi",`+tc.extra+`}`)
		openAIError(t, s, body, 400, tc.param)
		s, _, body = post(t, ts.url()+"/v1/responses", `{"model":"fake-model","input":"hi",`+tc.extra+`}`)
		openAIError(t, s, body, 400, tc.param)
	}
	if s, _, body := post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model",`+msgs+`,"temperature":0,"top_p":1,"max_tokens":2}`); s != 200 {
		t.Fatalf("temperature 0, top_p 1: %d %s", s, body)
	}
	for _, role := range []string{"hacker", "", "USER"} {
		s, _, body := post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model","messages":[{"role":"user","content":"a"},{"role":"`+role+`","content":"b"}]}`)
		if msg := openAIError(t, s, body, 400, "messages"); !strings.Contains(msg, "messages[1].role") {
			t.Fatalf("role %q: %s", role, msg)
		}
	}
	s, _, body := post(t, ts.url()+"/v1/responses", `{"model":"fake-model","input":[{"role":"robot","content":"hi"}]}`)
	openAIError(t, s, body, 400, "messages")
	for _, role := range openai.ChatRoles {
		if s, _, body := post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model","max_tokens":1,"messages":[{"role":"`+role+`","content":"a"}]}`); s != 200 {
			t.Fatalf("role %s: %d %s", role, s, body)
		}
	}
}

func TestOversizedBodyIsJSON413(t *testing.T) {
	ts := startSim(t, "--max-request-body-size-mb", "1")
	big := `{"model":"fake-model","prompt":"` + strings.Repeat("a", 1<<20+10) + `"}`
	// The server answers as soon as it knows the body is too big and closes the connection, so a
	// client still writing may see a reset: write on a raw connection, ignore write errors and
	// read the answer the server sent.
	s, h, body := oversizedPost(t, ts.url(), "Content-Length: "+strconv.Itoa(len(big)), big, false)
	if msg := openAIError(t, s, body, 413, ""); !strings.Contains(msg, "1 MiB") {
		t.Fatalf("413 message: %s", msg)
	}
	if h.Get("Content-Type") != "application/json" {
		t.Fatalf("413 content type %q", h.Get("Content-Type"))
	}
	// Chunked (no Content-Length): the limit holds while reading.
	if s, _, body := oversizedPost(t, ts.url(), "Transfer-Encoding: chunked", big, true); s != 413 {
		t.Fatalf("chunked oversized body: %d %s", s, body)
	}
}

// oversizedPost sends a POST /v1/completions with the given framing header on a raw
// connection, writing the body in 64 KiB pieces until the server stops reading, and returns
// the answer.
func oversizedPost(t *testing.T, base, framing, body string, chunked bool) (int, http.Header, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	head := "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n" + framing + "\r\n\r\n"
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	go func() { // stops at the first write error: the server has answered and closed
		for off := 0; off < len(body); off += 64 << 10 {
			piece := body[off:min(off+64<<10, len(body))]
			if chunked {
				piece = strconv.FormatInt(int64(len(piece)), 16) + "\r\n" + piece + "\r\n"
			}
			if _, err := conn.Write([]byte(piece)); err != nil {
				return
			}
		}
		if chunked {
			_, _ = conn.Write([]byte("0\r\n\r\n"))
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

func TestLoRANamesAndCountBounded(t *testing.T) {
	ts := startSim(t)
	load := func(name string) (int, string) {
		b, _ := json.Marshal(map[string]string{"lora_name": name, "lora_path": "/p"})
		s, _, body := post(t, ts.url()+"/v1/load_lora_adapter", string(b))
		return s, body
	}
	for _, bad := range []string{"", strings.Repeat("a", limits.MaxLoRANameLen+1), "a b", `x"}`, "naïve", "a\nb"} {
		s, body := load(bad)
		openAIError(t, s, body, 400, "lora_name")
	}
	for i := range limits.MaxLoRAAdapters {
		if s, body := load("org/adapter-" + strconv.Itoa(i)); s != 200 {
			t.Fatalf("adapter %d: %d %s", i, s, body)
		}
	}
	s, body := load("one-too-many")
	openAIError(t, s, body, 400, "lora_name")
	if s, _ := load("org/adapter-7"); s != 200 {
		t.Fatal("reloading a known adapter must still work at the bound")
	}
	// Unloading frees a place, and the adapter's metric series go with it.
	chat := `{"model":"org/adapter-3","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
	if s, _, body := post(t, ts.url()+"/v1/chat/completions", chat); s != 200 {
		t.Fatalf("adapter request: %d %s", s, body)
	}
	if _, m := get(t, ts.url()+"/metrics"); !strings.Contains(m, `model_name="org/adapter-3"`) {
		t.Fatal("adapter metrics missing")
	}
	post(t, ts.url()+"/v1/unload_lora_adapter", `{"lora_name":"org/adapter-3"}`)
	if _, m := get(t, ts.url()+"/metrics"); strings.Contains(m, `model_name="org/adapter-3"`) {
		t.Fatal("an unloaded adapter's series must be dropped")
	}
	if s, body := load("one-too-many"); s != 200 {
		t.Fatalf("after an unload: %d %s", s, body)
	}
	// Each adapter set in use is a lora_requests_info series: only the latest few are kept.
	for i := range 3 * metrics.MaxLoRAInfoSeries {
		chat := `{"model":"org/adapter-` + strconv.Itoa(100+i) + `","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
		if s, _, body := post(t, ts.url()+"/v1/chat/completions", chat); s != 200 {
			t.Fatalf("adapter request: %d %s", s, body)
		}
	}
	_, m := get(t, ts.url()+"/metrics")
	if n := strings.Count(m, "\nvllm:lora_requests_info{"); n < 2 || n > metrics.MaxLoRAInfoSeries {
		t.Fatalf("%d lora_requests_info series, want at most %d:\n%s", n, metrics.MaxLoRAInfoSeries, exposedLines(m, metrics.NameLoRAInfo))
	}
	if !strings.Contains(m, `running_lora_adapters="org/adapter-`+strconv.Itoa(100+3*metrics.MaxLoRAInfoSeries-1)+`"`) {
		t.Fatal("the latest adapter set is missing from lora_requests_info")
	}
	// --lora-modules follows the same rules.
	if _, err := config.Parse([]string{"--model", "m", "--lora-modules", `{"name":"bad name"}`}, config.Environment{}, nil); err == nil {
		t.Fatal("--lora-modules accepted a name with a space")
	}
}

// rawRequest sends a request on its own connection and returns it unread.
func rawRequest(t *testing.T, url, path, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitCounts polls the scheduler until running and waiting reach the wanted values.
func waitCounts(t *testing.T, ts *testSim, running, waiting int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, w := ts.sim.ranks[0].sched.Counts()
		if r == running && w == waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("running %d waiting %d after %v, want %d and %d", r, w, within, running, waiting)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClientDisconnectStopsWork: a request whose client leaves gives its
// slot back at once, whether it waits in the queue, for a non-streamed
// answer or between streamed tokens, instead of at the end of its 5
// minute schedule.
func TestClientDisconnectStopsWork(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "5m", "--max-num-seqs", "1")
	chat := func(stream bool) string {
		return `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":` + strconv.FormatBool(stream) + `}`
	}
	running := rawRequest(t, ts.url(), "/v1/chat/completions", chat(false))
	waitCounts(t, ts, 1, 0, 5*time.Second)
	queued := rawRequest(t, ts.url(), "/v1/chat/completions", chat(false))
	waitCounts(t, ts, 1, 1, 5*time.Second)
	queued.Close()
	waitCounts(t, ts, 1, 0, 5*time.Second)
	running.Close()
	waitCounts(t, ts, 0, 0, 5*time.Second)

	stream := rawRequest(t, ts.url(), "/v1/chat/completions", chat(true))
	waitCounts(t, ts, 1, 0, 5*time.Second)
	stream.Close()
	waitCounts(t, ts, 0, 0, 5*time.Second)

	// The connection stays usable for keep-alive after a watched wait.
	ts2 := startSim(t, "--time-to-first-token", "60ms")
	conn := rawRequest(t, ts2.url(), "/v1/chat/completions", chat(false))
	defer conn.Close()
	br := bufio.NewReader(conn)
	for range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		body := chat(false)
		conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
	}
}
