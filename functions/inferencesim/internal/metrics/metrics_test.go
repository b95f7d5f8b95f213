package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, m *Set) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series finds the series of family name whose labels include want (name=value pairs).
func series(fams map[string]*dto.MetricFamily, name string, want ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i < len(want); i += 2 {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == want[i] && l.GetValue() == want[i+1] }) {
				continue next
			}
		}
		return m
	}
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestBuckets125(t *testing.T) {
	if got := Buckets125(100); !slices.Equal(got, []float64{1, 2, 5, 10, 20, 50, 100}) {
		t.Fatalf("Buckets125(100) = %v", got)
	}
	if got := Buckets125(4096); got[len(got)-1] != 2000 || len(got) != 11 {
		t.Fatalf("Buckets125(4096) = %v", got)
	}
	if got := Buckets125(0); len(got) != 0 {
		t.Fatalf("Buckets125(0) = %v", got)
	}
}

// TestObserve: one finished sequence lands in vLLM's histograms with its measured phases,
// the queue time only when it waited, the per-token time only with two tokens or more,
// and the success counter under its finish reason.
func TestObserve(t *testing.T) {
	m := New(Settings{Model: "base", MaxModelLen: 1024, BlockSize: 16, KVCacheSize: 64, EnableKVCache: true}, func() *FakeMetrics { return nil })
	ms := time.Millisecond
	m.ForModel("base").Observe(&Request{Arrival: 0, Admitted: 10 * ms, FirstToken: 30 * ms, LastToken: 130 * ms, Finished: 140 * ms,
		PromptTokens: 20, CachedTokens: 16, GenTokens: 11, MaxTokens: 64, FinishReason: FinishLength, Queued: true, KvCacheQueried: true})
	m.ForModel("adapter").Observe(&Request{Arrival: 0, Admitted: 0, FirstToken: 5 * ms, LastToken: 5 * ms, Finished: 6 * ms,
		PromptTokens: 3, GenTokens: 1, MaxTokens: 1, FinishReason: "tool_calls"})
	f := gather(t, m)
	for _, c := range []struct {
		name  string
		count uint64
		sum   float64
	}{{NameE2E, 1, 0.14}, {NameQueue, 1, 0.01}, {NameInference, 1, 0.13}, {NamePrefill, 1, 0.02}, {NameTTFT, 1, 0.03},
		{NameDecode, 1, 0.1}, {NameTPOT, 1, 0.01}, {NameReqTPOT, 1, 0.01}, {NamePromptTokens, 1, 20}, {NameGenTokens, 1, 11},
		{NameParamsMaxTokens, 1, 64}} {
		s := series(f, c.name, "model_name", "base")
		if s == nil || s.GetHistogram().GetSampleCount() != c.count || !near(s.GetHistogram().GetSampleSum(), c.sum) {
			t.Errorf("%s{base}: %v, want count %d sum %v", c.name, s.GetHistogram(), c.count, c.sum)
		}
	}
	if s := series(f, NameQueue, "model_name", "adapter"); s != nil && s.GetHistogram().GetSampleCount() != 0 {
		t.Errorf("a request that never waited has a queue time")
	}
	if s := series(f, NameTPOT, "model_name", "adapter"); s != nil && s.GetHistogram().GetSampleCount() != 0 {
		t.Errorf("a one-token answer has a time per output token")
	}
	if s := series(f, NameSuccess, "model_name", "base", "finish_reason", "length"); s == nil || s.GetCounter().GetValue() != 1 {
		t.Errorf("success{base,length}: %v", s)
	}
	if s := series(f, NameSuccess, "model_name", "adapter", "finish_reason", "tool_calls"); s == nil || s.GetCounter().GetValue() != 1 {
		t.Errorf("success{adapter,tool_calls}: %v", s)
	}
	if s := series(f, NamePrefixHits, "model_name", "base"); s == nil || s.GetCounter().GetValue() != 16 {
		t.Errorf("prefix hits: %v", s)
	}
	if s := series(f, NamePrefixQueries, "model_name", "adapter"); s == nil || s.GetCounter().GetValue() != 0 {
		t.Errorf("a request that did not query the cache counted prefix queries: %v", s)
	}
	if s := series(f, NameCacheConfig, "block_size", "16", "num_gpu_blocks", "64"); s == nil || s.GetGauge().GetValue() != 1 {
		t.Errorf("cache_config_info: %v", s)
	}

	m.DropModel("adapter")
	m.DropModel("base") // never dropped
	f = gather(t, m)
	if series(f, NameE2E, "model_name", "adapter") != nil || series(f, NameSuccess, "model_name", "adapter") != nil {
		t.Error("an unloaded adapter's series remain")
	}
	if series(f, NameE2E, "model_name", "base") == nil {
		t.Error("the base model's series were dropped")
	}
}

func TestPrefixCountersOnlyWithTheKVCache(t *testing.T) {
	m := New(Settings{Model: "base", MaxModelLen: 128}, func() *FakeMetrics { return nil })
	f := gather(t, m)
	if f[NamePrefixHits] != nil || f[NamePrefixQueries] != nil {
		t.Fatal("prefix-cache counters exposed without --enable-kvcache")
	}
	if f[NameRunning] == nil || series(f, NameKVUsage, "model_name", "base") == nil {
		t.Fatal("the base model's gauges must exist from the start")
	}
}

// TestLoRAInfoBounded: an unchanged adapter set adds no series, and only the latest
// MaxLoRAInfoSeries sets are kept however many names clients send.
func TestLoRAInfoBounded(t *testing.T) {
	m := New(Settings{Model: "base", MaxModelLen: 128, MaxLoRAs: 2}, func() *FakeMetrics { return nil })
	m.SetLoRAInfo(2, "a", "")
	m.SetLoRAInfo(2, "a", "")
	if n := len(gather(t, m)[NameLoRAInfo].GetMetric()); n != 1 {
		t.Fatalf("one adapter set reported twice: %d series", n)
	}
	for i := 0; i < 3*MaxLoRAInfoSeries; i++ {
		m.SetLoRAInfo(2, "x"+strconv.Itoa(i), "")
	}
	f := gather(t, m)
	if n := len(f[NameLoRAInfo].GetMetric()); n != MaxLoRAInfoSeries {
		t.Fatalf("%d lora_requests_info series, want %d", n, MaxLoRAInfoSeries)
	}
	last := "x" + strconv.Itoa(3*MaxLoRAInfoSeries-1)
	if series(f, NameLoRAInfo, "running_lora_adapters", last, "max_lora", "2") == nil || series(f, NameLoRAInfo, "running_lora_adapters", "a") != nil {
		t.Fatal("the latest set must be kept and the oldest dropped")
	}
}

// TestFakeMetrics: while fake metrics are set only they are exposed; bad documents are
// refused with a reason.
func TestFakeMetrics(t *testing.T) {
	fm, err := ParseFakeMetrics([]byte(`{"running-requests":7,"kv-cache-usage":0.5,"ttft-buckets-values":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	var current *FakeMetrics
	m := New(Settings{Model: "base", MaxModelLen: 128}, func() *FakeMetrics { return current })
	m.Running.WithLabelValues("base").Set(1)
	if s := series(gather(t, m), NameRunning, "model_name", "base"); s.GetGauge().GetValue() != 1 {
		t.Fatalf("real running gauge: %v", s)
	}
	current = fm
	f := gather(t, m)
	if s := series(f, NameRunning, "model_name", "base"); s == nil || s.GetGauge().GetValue() != 7 {
		t.Fatalf("fake running gauge: %v", s)
	}
	if f[NameCacheConfig] != nil {
		t.Fatal("a real series is exposed beside the fake ones")
	}
	for doc, want := range map[string]string{
		`{"kv-cache-usage":2}`:    "kv-cache-usage",
		`{"running-requests":-1}`: "negative",
		`{"unknown-field":1}`:     "unknown field",
		`{"ttft-buckets-values":[` + strings.Repeat("1,", 30) + `1]}`: "at most",
		`not json`: "invalid fake metrics",
	} {
		if _, err := ParseFakeMetrics([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
