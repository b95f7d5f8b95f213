package lensctl_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/deploy/lensctl"
)

func runLensctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := lensctl.Main(args, strings.NewReader(""), &out, &errOut, func(string) string { return "" })
	return code, out.String(), errOut.String()
}

type predictionJSON struct {
	Engine struct {
		Replicas      int `json:"replicas"`
		KVCacheBlocks int `json:"kv_cache_blocks"`
	} `json:"engine"`
	Stages []struct {
		Overloaded bool `json:"overloaded"`
		Metrics    struct {
			Requests int     `json:"requests"`
			TTFTMean float64 `json:"ttft_mean_ms"`
			E2EMean  float64 `json:"e2e_mean_ms"`
			Decode   float64 `json:"decode_interval_of_means_ms"`
		} `json:"metrics"`
	} `json:"stages"`
}

func predictJSON(t *testing.T, args ...string) predictionJSON {
	t.Helper()
	code, out, errOut := runLensctl(t, append([]string{"predict", "-o", "json"}, args...)...)
	if code != lensctl.ExitOK {
		t.Fatalf("lensctl predict %v: exit %d: %s", args, code, errOut)
	}
	var p predictionJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return p
}

func TestPredictShowsMechanisms(t *testing.T) {
	file := filepath.Join(t.TempDir(), "benchmark.json")
	body := `{"shared_prefix":{"num_groups":10,"num_prompts_per_group":10,"system_prompt_len":100,"question_len":475,
	  "output_len":248,"stages":[{"rate":4,"duration":120},{"rate":30,"duration":120}]}}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	engine := []string{"-f", file, "--model", "meta-llama/Llama-2-7b-hf", "--max-num-seqs", "128", "--max-num-batched-tokens", "2048"}
	one := predictJSON(t, engine...)
	if len(one.Stages) != 2 || one.Stages[0].Metrics.Requests < 400 || one.Stages[0].Overloaded {
		t.Fatalf("one replica: %+v", one)
	}
	// 30 requests/s is past one H100's capacity for Llama-2-7B on this workload: the queue grows.
	if !one.Stages[1].Overloaded {
		t.Errorf("30 rps on one replica is not overloaded: %+v", one.Stages[1])
	}
	// Two replicas halve each engine's batch: the decode interval falls and the overload goes.
	two := predictJSON(t, append(engine, "--replicas", "2")...)
	if two.Engine.Replicas != 2 || two.Stages[1].Overloaded || two.Stages[1].Metrics.Decode >= one.Stages[1].Metrics.Decode {
		t.Errorf("two replicas: %+v against one: %+v", two.Stages[1], one.Stages[1])
	}
	// A smaller max_num_seqs caps the batch: requests queue, so TTFT grows at load.
	small := predictJSON(t, append(engine[:len(engine)-4], "--max-num-seqs", "16", "--max-num-batched-tokens", "2048", "--replicas", "2")...)
	if small.Stages[1].Metrics.TTFTMean <= 2*two.Stages[1].Metrics.TTFTMean {
		t.Errorf("max_num_seqs 16: TTFT %.1f ms, 128: %.1f ms", small.Stages[1].Metrics.TTFTMean, two.Stages[1].Metrics.TTFTMean)
	}
	code, out, _ := runLensctl(t, append([]string{"predict"}, engine...)...)
	if code != lensctl.ExitOK || !strings.Contains(out, "overloaded") || !strings.Contains(out, "Llama-2-7b-hf on 1 x H100-SXM-80GB") {
		t.Errorf("table output (exit %d):\n%s", code, out)
	}
}

func TestPredictRefusesBadInput(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(huge, []byte(`{"shared_prefix":{"num_groups":1,"num_prompts_per_group":1,"system_prompt_len":10,`+
		`"question_len":10,"output_len":10,"stages":[{"rate":10000,"duration":14400}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"no workload":       {"--model", "meta-llama/Llama-2-7b-hf"},
		"unknown model":     {"--workload", "chatbot_synthetic.yaml", "--model", "gpt-17"},
		"tp":                {"--workload", "chatbot_synthetic.yaml", "--model", "meta-llama/Llama-2-7b-hf", "--tensor-parallel-size", "3"},
		"does not fit":      {"--workload", "chatbot_synthetic.yaml", "--model", "meta-llama/Llama-2-70b-hf", "--hardware", "L40S-48GB"},
		"closed loop":       {"--workload", "sanity_random_concurrent.yaml", "--model", "meta-llama/Llama-2-7b-hf"},
		"unknown gpu":       {"--workload", "chatbot_synthetic.yaml", "--model", "meta-llama/Llama-2-7b-hf", "--hardware", "TPU"},
		"unknown workload":  {"--workload", "nope.yaml", "--model", "meta-llama/Llama-2-7b-hf"},
		"too many requests": {"-f", huge, "--model", "meta-llama/Llama-2-7b-hf"},
	} {
		code, _, errOut := runLensctl(t, append([]string{"predict"}, args...)...)
		if code != lensctl.ExitUsage || !strings.Contains(errOut, "usage error") {
			t.Errorf("%s: exit %d, %q", name, code, errOut)
		}
	}
}

func TestPredictReadsAHuggingFaceConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":2048,"intermediate_size":5632,
	  "num_attention_heads":32,"num_hidden_layers":22,"num_key_value_heads":4,"vocab_size":32000,"torch_dtype":"bfloat16",
	  "max_position_embeddings":2048}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := predictJSON(t, "--workload", "sanity_random.yaml", "--model", cfg)
	if len(p.Stages) != 1 || p.Stages[0].Metrics.Requests == 0 || p.Engine.KVCacheBlocks < 100000 {
		t.Errorf("a 1.1B model from its config.json: %+v", p)
	}
}

// A mixture-of-experts engine pays its kernel warm-up when a step first reaches a kernel
// configuration its start-up did not compile (a fresh prompt's prefill of ~575 tokens, past
// the 256 tokens of its captured graphs; two or three fresh prompts in one step): requests
// arriving during a stall wait, so a short run's mean TTFT carries it; --kernel-warmup-seconds 0 (a warmed server) does
// not, and a negative stall is refused.
func TestPredictPaysAMoEKernelWarmup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "benchmark.json")
	body := `{"shared_prefix":{"num_groups":10,"num_prompts_per_group":10,"system_prompt_len":100,"question_len":475,
	  "output_len":64,"stages":[{"rate":5,"duration":30}]}}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	engine := []string{"-f", file, "--model", "mistralai/Mixtral-8x7B-v0.1", "--tensor-parallel-size", "2", "--max-num-seqs", "128", "--max-num-batched-tokens", "2048"}
	cold := predictJSON(t, engine...)
	warm := predictJSON(t, append(engine, "--kernel-warmup-seconds", "0")...)
	// One to three 2 s stalls: each makes 2 s x 5 rps requests wait 1 s on average and delays
	// those queued behind; over 150 requests, 70-1000 ms of mean TTFT.
	if d := cold.Stages[0].Metrics.TTFTMean - warm.Stages[0].Metrics.TTFTMean; d < 40 || d > 1000 {
		t.Errorf("the warm-up added %.1f ms to the mean TTFT (cold %.1f, warm %.1f)", d, cold.Stages[0].Metrics.TTFTMean, warm.Stages[0].Metrics.TTFTMean)
	}
	if code, _, errOut := runLensctl(t, append([]string{"predict"}, append(engine, "--kernel-warmup-seconds", "-1")...)...); code != lensctl.ExitUsage || !strings.Contains(errOut, "kernel_warmup_seconds") {
		t.Errorf("a negative warm-up: exit %d, %q", code, errOut)
	}
}
