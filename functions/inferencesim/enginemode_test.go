package inferencesim

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

// The engine model through HTTP: TTFT and gaps come from the batch, the metrics report the
// engine, and vLLM's answers hold.

const engineModel = "meta-llama/Llama-2-7b-hf"

func startEngineSim(t *testing.T, extra ...string) *testSim {
	t.Helper()
	return startSim(t, append([]string{"--model", engineModel, "--latency-calculator", "engine", "--max-num-seqs", "64",
		"--max-num-batched-tokens", "2048", "--max-model-len", "4096"}, extra...)...)
}

func words(n int) string { return strings.Repeat("lorem ", n) }

type completion struct {
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		Details          struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func TestEngineTimesGenerationFromTheBatch(t *testing.T) {
	ts := startEngineSim(t)
	body := `{"model":"` + engineModel + `","prompt":"` + words(500) + `","max_tokens":40,"ignore_eos":true}`
	start := time.Now()
	code, _, raw := post(t, ts.url()+"/v1/completions", body)
	alone := time.Since(start)
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	var c completion
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	if c.Usage.CompletionTokens != 40 || c.Usage.PromptTokens != 500 || c.Usage.Details.Cached != 0 {
		t.Fatalf("usage %+v", c.Usage)
	}
	// Alone on an H100, Llama-2-7B decodes a token in about 6.5 ms: 40 tokens take about a
	// quarter of a second, never the zero the configured latencies default to.
	if alone < 200*time.Millisecond || alone > 3*time.Second {
		t.Errorf("40 tokens took %v alone", alone)
	}
	// The same prompt again hits the prefix cache: all but its last partial block.
	_, _, raw = post(t, ts.url()+"/v1/completions", body)
	_ = json.Unmarshal([]byte(raw), &c)
	if c.Usage.Details.Cached != 496 {
		t.Errorf("cached tokens %d on a repeat, want 496 (31 blocks of 16)", c.Usage.Details.Cached)
	}

	// 48 requests at once share steps: each token takes longer than alone, and the engine's
	// gauges and counters say why.
	var wg sync.WaitGroup
	errs := make(chan string, 48)
	for i := 0; i < 48; i++ {
		wg.Go(func() {
			// A word of its own first: no two share a prefix block.
			b := `{"model":"` + engineModel + `","prompt":"unique` + itoa(i) + " " + words(400+i) + `","max_tokens":40,"ignore_eos":true,"stream":true}`
			code, _, raw := post(t, ts.url()+"/v1/completions", b)
			if code != 200 || !strings.Contains(raw, "[DONE]") {
				errs <- raw
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("a concurrent request failed: %s", e)
	}
	_, metrics := get(t, ts.url()+"/metrics")
	for _, want := range []string{"vllm:iteration_tokens_total_count", "vllm:num_preemptions_total", "vllm:prefix_cache_queries_total",
		`vllm:cache_config_info{block_size="16",num_gpu_blocks="7425"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(metrics, `vllm:prefix_cache_hits_total{model_name="`+engineModel+`"} 496`) {
		t.Errorf("prefix hits are not the engine's: %s", grepLines(metrics, "prefix_cache"))
	}
	// One request's steps, then 48 sharing steps: the mean tokens per step is well above 1.
	if !strings.Contains(metrics, "vllm:iteration_tokens_total_sum") {
		t.Errorf("no tokens per step")
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestEngineStreamsAtStepEnds(t *testing.T) {
	ts := startEngineSim(t)
	body := `{"model":"` + engineModel + `","prompt":"` + words(100) + `","max_tokens":20,"ignore_eos":true,"stream":true}`
	code, _, raw := post(t, ts.url()+"/v1/completions", body)
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	ev := sseEvents(t, raw)
	// 20 token chunks, the finish chunk, [DONE] (the usage chunk only when asked).
	if len(ev) < 21 || ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("%d events: %v", len(ev), ev)
	}
}

func TestEngineRefusesWhatVLLMRefuses(t *testing.T) {
	ts := startEngineSim(t, "--kv-cache-blocks", "300")
	// 4096 tokens of context in a 4,800-token cache: accepted at start; one request's 4,000
	// tokens fit, so the engine serves it.
	code, _, raw := post(t, ts.url()+"/v1/completions", `{"model":"`+engineModel+`","prompt":"`+words(3000)+`","max_tokens":1000,"ignore_eos":true}`)
	if code != 200 {
		t.Fatalf("a request that fits: %d %s", code, raw)
	}
	code, _, raw = post(t, ts.url()+"/v1/completions", `{"model":"`+engineModel+`","prompt":"`+words(4000)+`","max_tokens":500}`)
	if code != 400 || !strings.Contains(raw, "maximum context length") {
		t.Errorf("over the context window: %d %s", code, raw)
	}
}

func TestEngineStartRefusesBadSettings(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown model": {"--model", "acme/nothing", "--latency-calculator", "engine"},
		"tp":            {"--model", engineModel, "--latency-calculator", "engine", "--tensor-parallel-size", "5"},
		"no fit":        {"--model", "meta-llama/Llama-2-70b-hf", "--latency-calculator", "engine", "--hardware", "L40S-48GB"},
		"small cache":   {"--model", engineModel, "--latency-calculator", "engine", "--kv-cache-blocks", "10", "--max-model-len", "4096"},
	} {
		if _, err := config.Parse(args, config.Environment{}, nil); err == nil || !strings.Contains(err.Error(), "engine model") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
