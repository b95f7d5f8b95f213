package inferencesim

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

var idPattern = regexp.MustCompile(`^chatcmpl-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestStreamChunkSequence(t *testing.T) {
	ts := startSim(t)
	status, hdr, body := post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"Hello"}],"max_tokens":16,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	if status != 200 || hdr.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d content-type %q", status, hdr.Get("Content-Type"))
	}
	ev := sseEvents(t, body)
	// role + 16 tokens + finish + usage + [DONE]
	if len(ev) != 20 {
		t.Fatalf("got %d events, want 20:\n%s", len(ev), body)
	}
	type chunk struct {
		ID      string           `json:"id"`
		Object  string           `json:"object"`
		Model   string           `json:"model"`
		Usage   *json.RawMessage `json:"usage"`
		Choices []struct {
			Index        int             `json:"index"`
			FinishReason *string         `json:"finish_reason"`
			Delta        json.RawMessage `json:"delta"`
		} `json:"choices"`
	}
	var first chunk
	for i, e := range ev[:19] {
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, e)
		}
		if i == 0 {
			first = c
			if !idPattern.MatchString(c.ID) {
				t.Fatalf("id %q", c.ID)
			}
		}
		if c.ID != first.ID || c.Object != "chat.completion.chunk" || c.Model != "fake-model" {
			t.Fatalf("event %d envelope: %s", i, e)
		}
		if !strings.Contains(e, `"usage":`) {
			t.Fatalf("event %d lacks usage: %s", i, e)
		}
		switch {
		case i == 0:
			if string(c.Choices[0].Delta) != `{"role":"assistant"}` || c.Choices[0].FinishReason != nil {
				t.Fatalf("role chunk: %s", e)
			}
		case i <= 16:
			if !strings.HasPrefix(string(c.Choices[0].Delta), `{"content":`) || c.Usage != nil {
				t.Fatalf("token chunk %d: %s", i, e)
			}
		case i == 17:
			if string(c.Choices[0].Delta) != `{}` || c.Choices[0].FinishReason == nil || *c.Choices[0].FinishReason != "length" {
				t.Fatalf("finish chunk: %s", e)
			}
		case i == 18:
			if len(c.Choices) != 0 || c.Usage == nil || !strings.Contains(string(*c.Usage), `"completion_tokens":16`) {
				t.Fatalf("usage chunk: %s", e)
			}
		}
	}
	if ev[19] != "[DONE]" {
		t.Fatalf("last event %q", ev[19])
	}
}

func TestStreamWithoutUsageAndCompletions(t *testing.T) {
	ts := startSim(t)
	_, _, body := post(t, ts.url()+"/v1/completions", `{"model":"fake-model","prompt":"Hi","max_tokens":4,"ignore_eos":true,"stream":true}`)
	ev := sseEvents(t, body)
	if len(ev) != 6 || ev[5] != "[DONE]" { // 4 tokens + finish + [DONE], no role chunk for text
		t.Fatalf("events %d: %s", len(ev), body)
	}
	if !strings.Contains(ev[0], `"object":"text_completion"`) || !strings.Contains(ev[0], `"text":`) {
		t.Fatalf("text chunk %s", ev[0])
	}
	if !strings.Contains(ev[4], `"finish_reason":"length"`) {
		t.Fatalf("finish chunk %s", ev[4])
	}
}

func TestNonStreamBodyLayout(t *testing.T) {
	ts := startSim(t, "--mode", "echo")
	status, hdr, body := post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"system","content":"be nice"},{"role":"user","content":"Hello \"world\"\n"}]}`)
	if status != 200 || hdr.Get("Content-Type") != "application/json" || hdr.Get("Server") != "fasthttp" {
		t.Fatalf("status %d headers %v", status, hdr)
	}
	re := regexp.MustCompile(`^\{"id":"chatcmpl-[0-9a-f-]{36}","model":"fake-model","object":"chat.completion","created":\d+,` +
		`"usage":\{"prompt_tokens":\d+,"completion_tokens":4,"total_tokens":\d+,"prompt_tokens_details":\{"cached_tokens":0\}\},` +
		`"choices":\[\{"index":0,"finish_reason":"stop","message":\{"role":"assistant","content":"Hello \\"world\\"\\n"\}\}\]\}$`)
	if !re.MatchString(body) {
		t.Fatalf("body layout:\n%s", body)
	}
}

func TestErrorBodies(t *testing.T) {
	ts := startSim(t, "--max-model-len", "100")
	cases := []struct {
		name, body string
		headers    []string
		status     int
		want       string
	}{
		{"bad json", `{"model":`, nil, 400, `{"error":{"message":"Failed to read and parse request body, unexpected end of JSON input","type":"BadRequestError","param":null,"code":400}}`},
		{"unknown model", `{"model":"x","messages":[{"role":"user","content":"hi"}]}`, nil, 404, "{\"error\":{\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}}"},
		{"context window", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":500}`, nil, 400,
			`{"error":{"message":"This model's maximum context length is 100 tokens. However, you requested 506 tokens (6 in the messages, 500 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}`},
		{"x-return-error", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}]}`, []string{"X-Return-Error", "429"}, 429,
			`{"error":{"message":"Simulated error triggered by X-Return-Error header (code 429)","type":"RateLimitError","param":null,"code":429}}`},
		{"x-return-error not a code", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}]}`, []string{"X-Return-Error", "abc"}, 400, `"type":"BadRequestError"`},
		{"max_tokens zero", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, nil, 400, `"param":"max_tokens"`},
		{"n zero", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"n":0}`, nil, 400, `"param":"n"`},
		{"ignore_eos without max", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"ignore_eos":true}`, nil, 400, `"param":"ignore_eos"`},
		{"remote decode stream", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"stream":true,"kv_transfer_params":{"do_remote_decode":true}}`, nil, 400, `Prefill does not support streaming`},
		{"array without items", `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"xs":{"type":"array"}}}}}]}`, nil, 400, `Tool validation failed`},
		{"empty messages", `{"model":"fake-model","messages":[]}`, nil, 400, `"param":"messages"`},
		{"bad prompt", `{"model":"fake-model","prompt":{"a":1}}`, nil, 400, `"param":"prompt"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/v1/chat/completions"
			if strings.Contains(c.body, `"prompt"`) {
				path = "/v1/completions"
			}
			status, _, body := post(t, ts.url()+path, c.body, c.headers...)
			if status != c.status || !strings.Contains(body, c.want) {
				t.Fatalf("got %d %s\nwant %d containing %s", status, body, c.status, c.want)
			}
		})
	}
}

func TestInjectedFailureTypes(t *testing.T) {
	want := map[string]struct {
		status int
		msg    string
	}{
		config.FailureRateLimit:      {429, "Rate limit reached for fake-model in organization org-xxx on requests per min (RPM): Limit 3, Used 3, Requested 1."},
		config.FailureInvalidAPIKey:  {401, "Incorrect API key provided."},
		config.FailureContextLength:  {400, "This model's maximum context length is 4096 tokens. However, your messages resulted in 4500 tokens."},
		config.FailureServerError:    {503, "The server is overloaded or not ready yet."},
		config.FailureInvalidRequest: {400, "Invalid request: missing required parameter 'model'."},
		config.FailureModelNotFound:  {404, "The model 'fake-model-nonexistent' does not exist"},
	}
	for kind, w := range want {
		ts := startSim(t, "--failure-injection-rate", "100", "--failure-types", kind)
		status, _, body := post(t, ts.url()+"/v1/completions", `{"model":"fake-model","prompt":"hi"}`)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || status != w.status || e.Error.Message != w.msg || e.Error.Code != w.status {
			t.Errorf("%s: %d %s", kind, status, body)
		}
	}
}

func TestFailureRateIsSeeded(t *testing.T) {
	pattern := func() string {
		ts := startSim(t, "--failure-injection-rate", "50", "--seed", "42")
		var b strings.Builder
		for i := 0; i < 40; i++ {
			status, _, _ := post(t, ts.url()+"/v1/completions", `{"model":"fake-model","prompt":"hi","max_tokens":2}`)
			b.WriteString(itoa(status) + " ")
		}
		return b.String()
	}
	a, b := pattern(), pattern()
	if a != b {
		t.Fatalf("same seed, different failures:\n%s\n%s", a, b)
	}
	if n := strings.Count(a, "200"); n < 8 || n > 32 {
		t.Fatalf("50%% failure rate gave %d successes of 40: %s", n, a)
	}
}

// TestStreamFramesNeverSplit: when many frames are due at once (zero
// latency, 200 tokens) every Read still ends on a frame boundary.
func TestStreamFramesNeverSplit(t *testing.T) {
	r := newTestRank(t)
	body := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":200,"ignore_eos":true,"stream":true}`
	rc := newRequestCtx("/v1/chat/completions", body)
	r.handle(rc)
	stream := rc.Response.BodyStream()
	buf := make([]byte, 4096)
	reads := 0
	for {
		n, err := stream.Read(buf)
		if n > 0 {
			reads++
			if !strings.HasSuffix(string(buf[:n]), "\n\n") || !strings.HasPrefix(string(buf[:n]), "data: ") {
				t.Fatalf("read %d is not whole frames: %q", reads, buf[:n])
			}
		}
		if err != nil {
			break
		}
	}
	rc.Response.Reset()
	if reads < 2 {
		t.Fatalf("200 tokens fit in %d reads of 4 KiB?", reads)
	}
}
