package inferencesim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

func newTestRank(t testing.TB, args ...string) *rank {
	t.Helper()
	cfg, err := config.Parse(append([]string{"--model", "fake-model", "--seed", "1", "--max-num-seqs", "64"}, args...), config.Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(cfg, WithCoarseTimers())
	if err != nil {
		t.Fatal(err)
	}
	return sim.ranks[0]
}

func newRequestCtx(path, body string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.SetBodyString(body)
	return &ctx
}

// serve runs one request through the handler in-process (no sockets).
func serve(r *rank, ctx *fasthttp.RequestCtx, path, body string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.SetBodyString(body)
	r.handle(ctx)
	if s := ctx.Response.BodyStream(); s != nil {
		buf := make([]byte, 4096)
		for {
			if _, err := s.Read(buf); err != nil {
				break
			}
		}
		ctx.Response.Reset() // closes the stream
	}
}

// FuzzGenerateRequest: any body gets either a well-formed response or an
// OpenAI error body, never a panic, and the running slot is always freed.
func FuzzGenerateRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"fake-model","messages":[{"role":"user","content":"Hello"}],"max_tokens":4}`,
		`{"model":"fake-model","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"n":2,"logprobs":true,"top_logprobs":2}`,
		`{"model":"fake-model","prompt":[[1,2],[3]],"max_tokens":2,"echo":true,"logprobs":1}`,
		`{"model":"fake-model","prompt":["a","b"],"stream":true}`,
		`{"model":"fake-model","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}},"b":{"enum":["x","y"]}},"required":["a"]}}}],"tool_choice":"required","stream":true}`,
		`{"model":"fake-model","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"array"}}}]}`,
		`{"model":"fake-model","messages":null}`, `[]`, `{"model":1}`, ``,
		`{"model":"fake-model","input":[{"role":"user","content":"hi"}],"instructions":"x","max_output_tokens":3,"stream":true}`,
		// the hostile requests of issue 9
		`{"model":"fake-model","messages":[{"role":"user","content":"x"}],"max_tokens":20,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"array","minItems":1000000000,"items":{"type":"array","minItems":1000000000,"items":{"type":"number","minimum":-1e308,"maximum":1e308}}}}}],"tool_choice":"required"}`,
		`{"model":"fake-model","prompt":[[1],[2],[3]],"n":100,"max_tokens":1}`,
		`{"model":"fake-model","messages":[{"role":"user","content":"x"}],"n":128,"max_tokens":200,"logprobs":true,"top_logprobs":20}`,
		`{"model":"fake-model","messages":[{"role":"robot","content":"x"}],"temperature":-1,"top_p":0}`,
		`{"model":"fake-model","prompt":"x","temperature":1e400}`,
		`{"model":"fake-model","messages":[{},{},{}]}`,
	} {
		f.Add(s)
	}
	r := newTestRank(f, "--max-model-len", "256")
	var ctx fasthttp.RequestCtx
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/responses"} {
			serve(r, &ctx, path, body)
			requireOpenAIAnswer(t, &ctx, path, body)
		}
		if running, waiting := r.sched.Counts(); running != 0 || waiting != 0 {
			t.Fatalf("slot leaked: running %d waiting %d", running, waiting)
		}
	})
}

// requireOpenAIAnswer fails unless the response is valid JSON (or a
// stream) on 200 and an OpenAI error body with the status as its code
// otherwise.
func requireOpenAIAnswer(t *testing.T, ctx *fasthttp.RequestCtx, path, body string) {
	t.Helper()
	code := ctx.Response.StatusCode()
	out := ctx.Response.Body()
	if code != 200 {
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out, &e); err != nil || e.Error.Code != code || e.Error.Message == "" {
			t.Fatalf("%s %q: status %d with body %q", path, body, code, out)
		}
	} else if len(out) > 0 && !json.Valid(out) {
		t.Fatalf("%s %q: invalid JSON response %q", path, body, out)
	}
}

// FuzzEmbeddingsRequest: any body gets embeddings for each input (never
// more than the bound allows) or an OpenAI error.
func FuzzEmbeddingsRequest(f *testing.F) {
	fuzzEndpoint(f, "/v1/embeddings", []string{
		`{"model":"fake-model","input":"hi"}`, `{"model":"fake-model","input":["a","b"],"dimensions":8,"encoding_format":"base64"}`,
		`{"model":"fake-model","input":[[1,2],[3]],"dimensions":65536}`, `{"model":"fake-model","input":[1,2,3]}`,
		`{"model":"fake-model","input":["x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x","x"],"dimensions":65536}`,
		`{"model":"fake-model","input":[],"dimensions":0}`, `{"model":"fake-model","input":{"a":1}}`, `{"input":"a"}`, `[`,
	}, func(t *testing.T, ctx *fasthttp.RequestCtx, body string) {
		if ctx.Response.StatusCode() != 200 {
			return
		}
		var resp struct {
			Data []struct {
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(ctx.Response.Body(), &resp); err != nil || len(resp.Data) == 0 || len(resp.Data) > limits.MaxEmbeddingInputs {
			t.Fatalf("%q: %d embeddings (%v)", body, len(resp.Data), err)
		}
		if n := len(ctx.Response.Body()); n > limits.MaxEmbeddingValues*16+limits.MaxEmbeddingInputs*64+1024 {
			t.Fatalf("%q: %d bytes of answer", body, n)
		}
	})
}

// FuzzTokenizeRequest: any body is tokenized or refused with an OpenAI error.
func FuzzTokenizeRequest(f *testing.F) {
	fuzzEndpoint(f, "/tokenize", []string{`{"prompt":"Hello, world"}`, `{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}]}`, `{}`, `{"prompt":1}`, `null`}, nil)
}

// fuzzEndpoint fuzzes one endpoint from seeds: every answer must be JSON or
// an OpenAI error, then check (when set) looks further.
func fuzzEndpoint(f *testing.F, path string, seeds []string, check func(t *testing.T, ctx *fasthttp.RequestCtx, body string)) {
	for _, s := range seeds {
		f.Add(s)
	}
	r := newTestRank(f)
	var ctx fasthttp.RequestCtx
	f.Fuzz(func(t *testing.T, body string) {
		serve(r, &ctx, path, body)
		requireOpenAIAnswer(t, &ctx, path, body)
		if check != nil {
			check(t, &ctx, body)
		}
	})
}

// FuzzAdminConfig: an update is applied whole or refused whole with an
// OpenAI 400, and whatever is applied is a configuration the command line
// would accept.
func FuzzAdminConfig(f *testing.F) {
	for _, s := range []string{
		`{"failure-injection-rate":10,"failure-types":["rate_limit"]}`, `{"time-to-first-token":"10ms","time-to-first-token-std-dev":"3ms"}`,
		`{"time-to-first-token":"1000000h"}`, `{"time-factor-under-load":1e308}`, `{"time-factor-under-load":0}`,
		`{"time-factor-under-load":-5}`, `{"fake-metrics":{"running-requests":3,"kv-cache-usage":0.5}}`, `{"fake-metrics":null}`,
		`{"latency-calculator":"per-token","prefill-time-per-token":"1ms"}`, `{"inter-token-latency":1e300}`, `{"port":1}`, `[]`, `{"failure-types":"rate_limit server_error"}`,
	} {
		f.Add(s)
	}
	r := newTestRank(f)
	initial := r.sim.settings.Load()
	var ctx fasthttp.RequestCtx
	f.Fuzz(func(t *testing.T, body string) {
		r.sim.settings.Store(initial)
		serve(r, &ctx, "/admin/config", body)
		requireOpenAIAnswer(t, &ctx, "/admin/config", body)
		got := r.sim.settings.Load()
		if ctx.Response.StatusCode() != 200 {
			if got != initial {
				t.Fatalf("%q: refused but applied", body)
			}
			return
		}
		c := *r.sim.cfg
		c.FailureInjectionRate, c.FailureTypes, c.FakeMetrics = got.failureRate, got.failureTypes, got.fake
		c.LatencyCalculator, c.Latency = got.calcName, got.latencyParams
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: applied a configuration the flags refuse: %v", body, err)
		}
	})
}

// FuzzLoRARequest: a load is accepted only for a well-formed name, the
// registry never passes its bound, and unloading always answers 200.
func FuzzLoRARequest(f *testing.F) {
	for _, s := range []string{`{"lora_name":"a","lora_path":"/p"}`, `{"lora_name":"org/adapter@v1+x"}`, `{"lora_name":""}`,
		`{"lora_name":"a b"}`, `{"lora_name":1}`, `{"lora_name":"a","lora_path":"\u0000"}`, `{}`, `x`} {
		f.Add(s)
	}
	r := newTestRank(f)
	var ctx fasthttp.RequestCtx
	f.Fuzz(func(t *testing.T, body string) {
		serve(r, &ctx, "/v1/load_lora_adapter", body)
		requireOpenAIAnswer(t, &ctx, "/v1/load_lora_adapter", body)
		var req struct {
			Name string `json:"lora_name"`
			Path string `json:"lora_path"`
		}
		decoded := json.Unmarshal([]byte(body), &req) == nil
		if ctx.Response.StatusCode() == 200 && (!decoded || limits.CheckLoRA(req.Name, req.Path) != nil || !r.loras.Known(req.Name)) {
			t.Fatalf("%q: accepted a bad adapter", body)
		}
		if n := len(r.loras.List()); n > limits.MaxLoRAAdapters {
			t.Fatalf("%d adapters", n)
		}
		serve(r, &ctx, "/v1/unload_lora_adapter", body)
		if decoded && ctx.Response.StatusCode() != 200 {
			t.Fatalf("%q: unload answered %d", body, ctx.Response.StatusCode())
		}
		if decoded && r.loras.Known(req.Name) {
			t.Fatalf("%q: still loaded after unload", body)
		}
	})
}

// FuzzCountArrayItems: the pre-decoding count agrees with encoding/json
// on every valid array, and the shape check never panics.
func FuzzCountArrayItems(f *testing.F) {
	for _, s := range []string{`[]`, `[ ]`, `[1]`, `["a,b",[1,2],{"x":[3]}]`, `[ "\"", "]" ]`, `[[],[[]]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		openai.CheckJSONShape([]byte(s))
		var items []json.RawMessage
		if json.Unmarshal([]byte(s), &items) != nil {
			return
		}
		raw := []byte(strings.TrimSpace(s))
		if n := openai.CountArrayItems(raw, 1<<30); n != len(items) {
			t.Fatalf("%q: counted %d, encoding/json %d", s, n, len(items))
		}
		if n := openai.CountArrayItems(raw, 1); len(items) > 1 && n <= 1 {
			t.Fatalf("%q: limit 1 counted %d of %d", s, n, len(items))
		}
	})
}

func FuzzParsePrompts(f *testing.F) {
	for _, s := range []string{`"a"`, `["a","b"]`, `[1,2,3]`, `[[1],[2,3]]`, `[]`, `[["a"]]`, `{}`, `[1,"a"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := openai.ParsePrompts(json.RawMessage(s), limits.MaxSequences)
		if err == nil && len(ps) == 0 {
			t.Fatalf("%q: no prompts and no error", s)
		}
	})
}

func FuzzTokenizer(f *testing.F) {
	for _, s := range []string{"Hello, world!", "### user: hi\n", "a_b _c  d\t", "日本語 text", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := textgen.AppendTokens(nil, s)
		if len(toks) != textgen.CountTokens(s) {
			t.Fatalf("count mismatch for %q", s)
		}
		for _, tok := range toks {
			if tok == "" {
				t.Fatalf("empty token in %q", s)
			}
		}
	})
}

// TestNonStreamAllocs bounds the allocations of a zero-latency non-stream
// chat request through the whole handler.
func TestNonStreamAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	r := newTestRank(t)
	var ctx fasthttp.RequestCtx
	body := `{"model":"fake-model","messages":[{"role":"user","content":"Hello, can you tell me something about the weather today?"}],"max_tokens":16}`
	serve(r, &ctx, "/v1/chat/completions", body)
	allocs := testing.AllocsPerRun(200, func() { serve(r, &ctx, "/v1/chat/completions", body) })
	t.Logf("%.1f allocations per request", allocs)
	if allocs > 1 {
		t.Fatalf("%.1f allocations per non-stream request, want none", allocs)
	}
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	text := `{"model":"fake-model","prompt":"Hello, can you tell me something about the weather today?","max_tokens":16}`
	if a := testing.AllocsPerRun(200, func() { serve(r, &ctx, "/v1/completions", text) }); a > 1 {
		t.Fatalf("%.1f allocations per non-stream completion, want none", a)
	}
	models := testing.AllocsPerRun(200, func() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI("/v1/models")
		r.handle(&ctx)
	})
	if models > 2 {
		t.Fatalf("%.1f allocations per /v1/models", models)
	}
}

func TestTokenizerMatchesReference(t *testing.T) {
	got := textgen.AppendTokens(nil, "### user: Hello\n")
	want := []string{"#", "#", "# ", "user", ": ", "Hello\n"}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%q", got)
		}
	}
	if n := textgen.CountTokens("a_b _c"); n != 3 { // "a_b ", "_", "c"
		t.Fatalf("a_b _c: %d tokens", n)
	}
}

// TestResponseLengthDistribution: for max_tokens 16 the specification's equal buckets
// (1-2, 3-5, 6-8, 9-10, 11-13, 14-16 with 20/30/20/5/10/15 %) give a mean of about 6.8
// tokens and 5 % at the maximum.
func TestResponseLengthDistribution(t *testing.T) {
	g := textgen.NewRNG(3)
	sum, atMax, n := 0, 0, 40000
	for i := 0; i < n; i++ {
		l := textgen.ResponseLengthHistogram(&g, 1, 16)
		if l < 1 || l > 16 {
			t.Fatalf("length %d", l)
		}
		sum += l
		if l == 16 {
			atMax++
		}
	}
	mean := float64(sum) / float64(n)
	if mean < 6.65 || mean > 6.95 {
		t.Fatalf("mean %.2f, want about 6.8", mean)
	}
	if frac := float64(atMax) / float64(n); frac < 0.04 || frac > 0.06 {
		t.Fatalf("%.3f at max, want 0.05", frac)
	}
	for _, hi := range []int{120, 200} {
		for i := 0; i < 1000; i++ {
			if l := textgen.ResponseLengthHistogram(&g, 1, hi); l < 1 || l > hi {
				t.Fatalf("hi %d: %d", hi, l)
			}
		}
	}
}
