package inferencesim

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
)

func TestLoRALoadUnloadAndServe(t *testing.T) {
	ts := startSim(t, "--lora-modules", `{"name":"static-lora","path":"/static"}`)
	chat := `{"model":"dyn-lora","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	if s, _, _ := post(t, ts.url()+"/v1/chat/completions", chat); s != 404 {
		t.Fatalf("unknown adapter served: %d", s)
	}
	if s, _, _ := post(t, ts.url()+"/v1/load_lora_adapter", `{"lora_name":"dyn-lora","lora_path":"/dyn"}`); s != 200 {
		t.Fatalf("load: %d", s)
	}
	s, _, body := post(t, ts.url()+"/v1/chat/completions", chat)
	if s != 200 || !strings.Contains(body, `"model":"dyn-lora"`) {
		t.Fatalf("adapter request: %d %s", s, body)
	}
	_, models := get(t, ts.url()+"/v1/models")
	if !strings.Contains(models, `{"id":"dyn-lora","object":"model","created":`) || !strings.Contains(models, `"root":"/dyn","parent":"fake-model"`) {
		t.Fatalf("models: %s", models)
	}
	_, m := get(t, ts.url()+"/metrics")
	if !strings.Contains(m, `vllm:request_success_total{finish_reason=`) || !strings.Contains(m, `model_name="dyn-lora"`) ||
		!strings.Contains(m, `vllm:lora_requests_info{max_lora="1",running_lora_adapters="dyn-lora",waiting_lora_adapters=""}`) {
		t.Fatalf("LoRA metrics:\n%s", exposedLines(m, metrics.NameLoRAInfo, metrics.NameSuccess))
	}
	if s, _, _ := post(t, ts.url()+"/v1/unload_lora_adapter", `{"lora_name":"dyn-lora"}`); s != 200 {
		t.Fatalf("unload: %d", s)
	}
	if s, _, _ := post(t, ts.url()+"/v1/chat/completions", chat); s != 404 {
		t.Fatalf("unloaded adapter still served: %d", s)
	}
	if s, _, _ := post(t, ts.url()+"/v1/unload_lora_adapter", `{"lora_name":"never-loaded"}`); s != 200 {
		t.Fatal("unload of an unknown adapter must be 200, like vLLM")
	}
	if s, _, _ := post(t, ts.url()+"/v1/load_lora_adapter", `not json`); s != 400 {
		t.Fatal("bad load body accepted")
	}
}

func TestPrefillDecodeDisaggregation(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "300ms", "--kv-cache-transfer-latency", "5ms")
	s, _, body := post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"kv_transfer_params":{"do_remote_decode":true}}`)
	if s != 200 || !strings.Contains(body, `"finish_reason":"remote_decode"`) ||
		!strings.Contains(body, `"kv_transfer_params":{"do_remote_decode":false,"do_remote_prefill":true,"remote_block_ids":["DUMMY_ID"],"remote_engine_id":"DUMMY_ID","remote_host":"DUMMY","remote_port":1234,"tp_size":1}`) {
		t.Fatalf("prefill side: %d %s", s, body)
	}
	start := time.Now()
	s, _, _ = post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":["1"],"remote_host":"h","remote_port":1}}`)
	if took := time.Since(start); s != 200 || took > 150*time.Millisecond {
		t.Fatalf("decode side took %v (status %d): the KV transfer latency must replace the 300ms TTFT", took, s)
	}
}

func TestTokenizeAndEmbeddings(t *testing.T) {
	ts := startSim(t, "--default-embedding-dimensions", "8")
	_, _, body := post(t, ts.url()+"/tokenize", `{"prompt":"Hello, world"}`)
	var tok struct {
		MaxModelLen int      `json:"max_model_len"`
		Count       int      `json:"count"`
		Tokens      []uint32 `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(body), &tok); err != nil || tok.Count != 3 || len(tok.Tokens) != 3 || tok.MaxModelLen != 1024 ||
		tok.Tokens[0] != textgen.TokenID("Hello") || !strings.HasSuffix(body, `"token_strs":null}`) {
		t.Fatalf("tokenize: %s", body)
	}
	_, _, body = post(t, ts.url()+"/tokenize", `{"messages":[{"role":"user","content":"Hello"}]}`)
	if !strings.Contains(body, `"count":6`) {
		t.Fatalf("tokenize messages: %s", body)
	}
	s, _, body := post(t, ts.url()+"/v1/embeddings", `{"model":"fake-model","input":["a b","a b"]}`)
	var emb struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
			Index     int       `json:"index"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &emb); err != nil || s != 200 || len(emb.Data) != 2 || len(emb.Data[0].Embedding) != 8 || emb.Usage.PromptTokens != 4 {
		t.Fatalf("embeddings: %d %s", s, body)
	}
	var norm float64
	for i, v := range emb.Data[0].Embedding {
		norm += v * v
		if v != emb.Data[1].Embedding[i] {
			t.Fatal("same input, different vectors")
		}
	}
	if norm < 0.99 || norm > 1.01 {
		t.Fatalf("norm² %v", norm)
	}
	_, _, body = post(t, ts.url()+"/v1/embeddings", `{"model":"fake-model","input":"x","encoding_format":"base64","dimensions":4}`)
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	json.Unmarshal([]byte(body), &b64)
	if raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding); err != nil || len(raw) != 16 {
		t.Fatalf("base64 embedding: %s", body)
	}
}

func TestAdminConfig(t *testing.T) {
	ts := startSim(t)
	chat := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	if s, _, _ := post(t, ts.url()+"/v1/chat/completions", chat); s != 200 {
		t.Fatal(s)
	}
	s, _, body := post(t, ts.url()+"/admin/config", `{"failure-injection-rate":100,"failure-types":["invalid_api_key"],"time-to-first-token":"40ms"}`)
	if s != 200 || !strings.Contains(body, `"failure-injection-rate":100`) || !strings.Contains(body, `"time-to-first-token":"40ms"`) {
		t.Fatalf("admin update: %d %s", s, body)
	}
	if s, _, _ := post(t, ts.url()+"/v1/chat/completions", chat); s != 401 {
		t.Fatalf("after enabling failures: %d", s)
	}
	post(t, ts.url()+"/admin/config", `{"failure-injection-rate":0}`)
	start := time.Now()
	post(t, ts.url()+"/v1/chat/completions", chat)
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Fatalf("new TTFT not applied: %v", took)
	}
	if s, _, _ := post(t, ts.url()+"/admin/config", `{"port":1234}`); s != 400 {
		t.Fatal("a non-admin field must be refused")
	}
	if s, _, _ := post(t, ts.url()+"/admin/config", `{"time-to-first-token":"10ms","time-to-first-token-std-dev":"9ms"}`); s != 400 {
		t.Fatal("invalid latency accepted")
	}
	post(t, ts.url()+"/admin/config", `{"fake-metrics":{"running-requests":42}}`)
	_, m := get(t, ts.url()+"/metrics")
	if !strings.Contains(m, `vllm:num_requests_running{model_name="fake-model"} 42`) || strings.Contains(m, "vllm:e2e_request_latency_seconds") {
		t.Fatalf("fake metrics not switched on:\n%s", m)
	}
	_, cur := get(t, ts.url()+"/admin/config")
	if !strings.Contains(cur, `"running-requests":42`) {
		t.Fatalf("GET /admin/config: %s", cur)
	}
}

func TestHealthReadyAndPodHeaders(t *testing.T) {
	ts := startSimEnv(t, config.Environment{PodName: "sim-0", PodNamespace: "lensfn"}, "--startup-duration", "300ms")
	for _, path := range []string{"/ready", "/health/ready"} {
		if s, _ := get(t, ts.url()+path); s != 503 {
			t.Fatalf("%s during startup: %d", path, s)
		}
	}
	resp, err := http.Get(ts.url() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("x-inference-pod") != "sim-0" || resp.Header.Get("x-inference-namespace") != "lensfn" ||
		resp.Header.Get("x-inference-port") == "" {
		t.Fatalf("health %d headers %v", resp.StatusCode, resp.Header)
	}
	time.Sleep(320 * time.Millisecond)
	if s, _ := get(t, ts.url()+"/health/ready"); s != 200 {
		t.Fatalf("ready after startup: %d", s)
	}
}

func TestDataParallelRanks(t *testing.T) {
	ts := startSim(t, "--data-parallel-size", "3")
	if len(ts.urls) != 3 {
		t.Fatalf("%d ranks", len(ts.urls))
	}
	for _, u := range ts.urls {
		if s, _, _ := post(t, u+"/v1/completions", `{"model":"fake-model","prompt":"hi","max_tokens":2}`); s != 200 {
			t.Fatalf("%s: %d", u, s)
		}
	}
	// each rank has its own metrics
	post(t, ts.urls[1]+"/v1/completions", `{"model":"fake-model","prompt":"hi","max_tokens":2}`)
	_, m0 := get(t, ts.urls[0]+"/metrics")
	_, m1 := get(t, ts.urls[1]+"/metrics")
	if !strings.Contains(m0, `vllm:e2e_request_latency_seconds_count{model_name="fake-model"} 1`) ||
		!strings.Contains(m1, `vllm:e2e_request_latency_seconds_count{model_name="fake-model"} 2`) {
		t.Fatal("ranks share metrics")
	}
	cfg, _ := config.Parse([]string{"--model", "m", "--data-parallel-size", "4", "--data-parallel-rank", "2", "--port", "9000"}, config.Environment{}, nil)
	sim, err := New(cfg)
	if err != nil || len(sim.ranks) != 1 || sim.ranks[0].index != 2 || sim.Ports()[0] != 9000 {
		t.Fatalf("single rank: %v", err)
	}
}

func TestSelfSignedTLS(t *testing.T) {
	ts := startSim(t, "--self-signed-certs")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(ts.url() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || !strings.Contains(string(b), "fake-model") {
		t.Fatalf("TLS models: %d %s", resp.StatusCode, b)
	}
}

func TestToolCalls(t *testing.T) {
	ts := startSim(t)
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":3},"units":{"enum":["c","f"]},"tags":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":2}},"required":["city","days","units","tags"]}}}]`
	s, _, body := post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"weather?"}],"tools":`+tools+`,"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`)
	var resp struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || s != 200 || resp.Choices[0].FinishReason != "tool_calls" || len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("tool call: %d %s", s, body)
	}
	call := resp.Choices[0].Message.ToolCalls[0]
	var args struct {
		City  string   `json:"city"`
		Days  int      `json:"days"`
		Units string   `json:"units"`
		Tags  []string `json:"tags"`
	}
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || call.Function.Name != "get_weather" ||
		!strings.HasPrefix(call.ID, "chatcmpl-tool-") || args.City == "" || args.Days < 1 || args.Days > 3 ||
		(args.Units != "c" && args.Units != "f") || len(args.Tags) != 2 {
		t.Fatalf("arguments %s (%v)", call.Function.Arguments, err)
	}
	// streamed: the arguments arrive in pieces that concatenate to JSON
	_, _, body = post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"weather?"}],"stream":true,"tools":`+tools+`,"tool_choice":"required"}`)
	var argsText strings.Builder
	for _, e := range sseEvents(t, body) {
		if e == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(e), &c)
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				argsText.WriteString(tc.Function.Arguments)
			}
		}
	}
	if !strings.Contains(body, `"finish_reason":"tool_calls"`) || !json.Valid([]byte(strings.SplitN(argsText.String(), "}{", 2)[0]+"}")) && !json.Valid([]byte(argsText.String())) {
		t.Fatalf("streamed tool call arguments %q", argsText.String())
	}
	// none: plain text even with tools
	_, _, body = post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"weather?"}],"max_tokens":3,"tools":`+tools+`,"tool_choice":"none"}`)
	if strings.Contains(body, "tool_calls") {
		t.Fatalf("tool_choice none produced a call: %s", body)
	}
}

func TestLogprobsAndN(t *testing.T) {
	ts := startSim(t)
	_, _, body := post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"ignore_eos":true,"n":3,"logprobs":true,"top_logprobs":2}`)
	var resp struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Choices []struct {
			Index    int `json:"index"`
			Logprobs struct {
				Content []struct {
					Token       string            `json:"token"`
					TopLogprobs []json.RawMessage `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Choices) != 3 || resp.Usage.CompletionTokens != 9 ||
		resp.Choices[2].Index != 2 || len(resp.Choices[0].Logprobs.Content) != 3 || len(resp.Choices[0].Logprobs.Content[0].TopLogprobs) != 2 {
		t.Fatalf("n/logprobs: %v %s", err, body)
	}
}
