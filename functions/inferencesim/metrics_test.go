package inferencesim

import (
	"os"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
)

const fakeMetricsJSON = `{"running-requests":10,"waiting-requests":30,"kv-cache-usage":0.4,` +
	`"loras":[{"running":"lora4,lora2","waiting":"lora3","timestamp":1257894567}],` +
	`"ttft-buckets-values":[1,2,3],"request-success-total":{"stop":20,"length":5},"total-prompt-tokens":123}`

// TestFakeMetricsGolden checks the exposition of --fake-metrics against
// golden text: only fake values, vLLM names, labels and buckets.
func TestFakeMetricsGolden(t *testing.T) {
	ts := startSim(t, "--fake-metrics", fakeMetricsJSON, "--max-loras", "2")
	status, body := get(t, ts.url()+"/metrics")
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	golden := "testdata/fake_metrics.golden"
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(golden, []byte(body), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if body != string(want) {
		t.Fatalf("exposition differs from %s:\n%s", golden, body)
	}
}

// TestMetricsMeasured checks the real metrics after traffic: counts,
// labels and that latency histograms hold measured values.
func TestMetricsMeasured(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "30ms", "--inter-token-latency", "2ms")
	for i := 0; i < 3; i++ {
		post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model","messages":[{"role":"user","content":"Hello"}],"max_tokens":5,"ignore_eos":true}`)
	}
	post(t, ts.url()+"/v1/chat/completions", `{"model":"fake-model","messages":[{"role":"user","content":"Hello"}],"max_tokens":5,"ignore_eos":true,"stream":true}`)
	reg := ts.sim.ranks[0].metrics.Registry
	expected := `
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="fake-model"} 20
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="fake-model"} 0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="fake-model"} 24
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{finish_reason="length",model_name="fake-model"} 4
vllm:request_success_total{finish_reason="stop",model_name="fake-model"} 0
`
	_, exposition := get(t, ts.url()+"/metrics")
	if got := exposedLines(exposition, "vllm:generation_tokens_total", "vllm:prompt_tokens_total",
		"vllm:request_success_total", "vllm:num_requests_running"); got != strings.TrimLeft(expected, "\n") {
		t.Fatalf("exposition:\n%s\nwant:\n%s", got, expected)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case metrics.NameTTFT:
			h := mf.GetMetric()[0].GetHistogram()
			mean := h.GetSampleSum() / float64(h.GetSampleCount())
			if h.GetSampleCount() != 4 || mean < 0.029 || mean > 0.060 {
				t.Errorf("ttft count %d mean %.4f, want 4 near 0.030", h.GetSampleCount(), mean)
			}
		case metrics.NameITL:
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 16 {
				t.Errorf("itl count %d, want 16", h.GetSampleCount())
			}
		case metrics.NameE2E:
			h := mf.GetMetric()[0].GetHistogram()
			if mean := h.GetSampleSum() / float64(h.GetSampleCount()); mean < 0.037 {
				t.Errorf("e2e mean %.4f below the modelled 38 ms", mean)
			}
		}
	}
	_, body := get(t, ts.url()+"/metrics")
	for _, name := range []string{metrics.NameRunning, metrics.NameWaiting, metrics.NameKVUsage, metrics.NameCacheConfig, metrics.NameTTFT, metrics.NameTPOT, metrics.NameITL, metrics.NameReqTPOT, metrics.NameE2E, metrics.NameQueue,
		metrics.NameInference, metrics.NamePrefill, metrics.NameDecode, metrics.NamePromptTokens, metrics.NameGenTokens, metrics.NameParamsMaxTokens, metrics.NameMaxGenTokens, metrics.NamePromptTotal, metrics.NameGenTotal, metrics.NameSuccess} {
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if strings.Contains(body, "go_goroutines") {
		t.Error("private registry must not expose Go runtime metrics")
	}
}

// exposedLines keeps the HELP, TYPE and sample lines of the named
// metrics, in exposition order.
func exposedLines(text string, names ...string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		for _, n := range names {
			if strings.HasPrefix(line, "# HELP "+n+" ") || strings.HasPrefix(line, "# TYPE "+n+" ") ||
				strings.HasPrefix(line, n+"{") || strings.HasPrefix(line, n+" ") {
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String()
}

func TestBuckets125(t *testing.T) {
	got := metrics.Buckets125(1024)
	want := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v", got)
		}
	}
}
