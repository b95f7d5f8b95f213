package evalrun

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

func f(v float64) *float64 { return &v }

func rec(ok bool, start, end, ttft, tpot, in, out float64) loadgen.Record {
	r := loadgen.Record{Successful: ok, ScheduledAtSeconds: start, StartedAtSeconds: start, CompletedAtSeconds: end,
		LatencyMs: (end - start) * 1000, InputTokens: in, OutputTokens: out}
	if ttft > 0 {
		r.TTFTMs = &ttft
	}
	if tpot > 0 {
		r.TPOTMs = &tpot
	}
	return r
}

func TestPercentileInterpolatesLikeNumpy(t *testing.T) {
	v := []float64{1, 2, 3, 4}
	for p, want := range map[float64]float64{50: 2.5, 0: 1, 100: 4, 75: 3.25, 90: 3.7} {
		if got := Percentile(v, p); math.Abs(got-want) > 1e-12 {
			t.Errorf("p%g = %g, want %g", p, got, want)
		}
	}
}

func TestMetricsBlock(t *testing.T) {
	b := NewBuilder(&events.SLATargets{TTFTMs: f(100), TPOTMs: f(10)})
	b.Add(rec(true, 0, 1, 50, 5, 100, 11), []float64{5, 5})
	b.Add(rec(true, 0.5, 1.5, 150, 5, 100, 11), nil) // too slow a first token: not good
	b.Add(rec(true, 1, 2, 60, 20, 100, 11), nil)     // too slow per token: not good
	b.Add(rec(false, 1, 2, 0, 0, 100, 0), nil)
	m := b.Metrics("/tmp/x.jsonl")
	// benchmark time: 0 .. 2 s
	checks := map[string]float64{"benchmark_time_seconds": 2, "throughput_tps": 16.5, "input_throughput_tps": 150,
		"total_throughput_tps": 166.5, "throughput_rps": 1.5, "success_rate": 75, "error_rate": 25, "total_output_tokens": 33,
		"ttft_ms": 60, "tpot_ms": 5, "request_latency_ms": 1000, "itl_ms": 5}
	for k, want := range checks {
		if got, ok := m.Float(k); !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %g", k, m[k], want)
		}
	}
	if m["success_count"] != int64(3) || m["failure_count"] != int64(1) || m["request_count"] != int64(4) {
		t.Errorf("counts %v %v %v", m["success_count"], m["failure_count"], m["request_count"])
	}
	ttft := m["latency_distributions"].(map[string]any)["ttft"].(map[string]float64)
	if ttft["p99_ms"] != 148.2 || ttft["mean_ms"] != 86.667 || ttft["min_ms"] != 50 || ttft["p75_ms"] != 105 {
		t.Errorf("ttft distribution %v", ttft)
	}
	good := m["request_slo_goodput"].(map[string]any)
	if good["status"] != "measured" || good["good_requests"] != int64(1) || good["value"] != 0.5 {
		t.Errorf("goodput %v", good)
	}
	empty := NewBuilder(nil).Metrics("")
	if empty["success_rate"] != nil || empty["throughput_tps"] != nil || empty["request_slo_goodput"].(map[string]any)["status"] != "unavailable" {
		t.Errorf("empty metrics %v", empty)
	}
}

func TestSLAVerdict(t *testing.T) {
	b := NewBuilder(nil)
	for i := range 100 {
		b.Add(rec(true, float64(i)/100, float64(i)/100+0.5, float64(10+i), 2, 10, 100), nil)
	}
	m := b.Metrics("")
	if v := EvaluateSLA(m, nil); v != nil {
		t.Fatal("a verdict without targets")
	}
	met := EvaluateSLA(m, &events.SLATargets{TTFTMs: f(200), TPOTMs: f(5), SuccessRateMinPercent: f(99)})
	if met.Met == nil || !*met.Met || len(met.Checks) != 3 || met.Checks["ttft"].Percentile != "p99" || met.Checks["throughput"].Unit != "" {
		t.Fatalf("verdict %+v", met)
	}
	p50 := "p50"
	missed := EvaluateSLA(m, &events.SLATargets{TTFTMs: f(50), TTFTPercentile: &p50, ThroughputMinTPS: f(1e9)})
	if missed.Met == nil || *missed.Met || *missed.Checks["ttft"].Met || *missed.Checks["throughput"].Met || missed.Checks["throughput"].Unit != "tok/s" {
		t.Fatalf("verdict %+v", missed)
	}
	// Read back from the store, the block is plain JSON; the verdict is the same.
	raw, _ := json.Marshal(m)
	var back Metrics
	_ = json.Unmarshal(raw, &back)
	again := EvaluateSLA(back, &events.SLATargets{TTFTMs: f(200)})
	if again.Met == nil || !*again.Met {
		t.Fatalf("verdict from stored metrics %+v", again)
	}
	unknown := EvaluateSLA(NewBuilder(nil).Metrics(""), &events.SLATargets{TTFTMs: f(1)})
	if unknown.Met != nil || unknown.Checks["ttft"].Met != nil || unknown.Checks["ttft"].Actual != nil {
		t.Fatalf("verdict without data %+v", unknown)
	}
}
