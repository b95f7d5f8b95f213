package evalrun

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
		"ttft_ms": 60, "tpot_ms": 5, "request_latency_ms": 1000, "chunk_gap_ms": 5,
		// (latency - ttft) / (output tokens - 1) per request: 95, 85 and 94 ms
		"itl_ms": 94}
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

// A server that coalesces tokens (four per write, one write every 20 ms) gives chunk gaps near 0
// ms; the headline ITL is still the 5 ms each token took, and the gaps keep their own name.
func TestITLIsThePerTokenDecodeIntervalNotTheChunkGap(t *testing.T) {
	b := NewBuilder(nil)
	for i := range 10 {
		// 33 tokens: the first at 40 ms, the other 32 in 8 writes of 4, 20 ms apart.
		var gaps []float64
		for range 8 {
			gaps = append(gaps, 0.001, 0.001, 0.001, 20)
		}
		start := float64(i)
		b.Add(rec(true, start, start+0.2, 40, 5, 10, 33), gaps[:32])
	}
	m := b.Metrics("")
	if itl, _ := m.Float("itl_ms"); itl != 5 {
		t.Errorf("itl_ms %v, want 5 ((200 - 40) / 32)", m["itl_ms"])
	}
	if gap, _ := m.Float("chunk_gap_ms"); gap != 0.001 {
		t.Errorf("chunk_gap_ms %v, want 0.001", m["chunk_gap_ms"])
	}
	d := m["latency_distributions"].(map[string]any)
	if d["chunk_gap"].(map[string]float64)["max_ms"] != 20 || d["itl"].(map[string]float64)["p99_ms"] != 5 {
		t.Errorf("distributions %v", d)
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

// distribution finds percentiles by selection; they must be exactly what Percentile gives over
// the sorted values (numpy's linear interpolation), for any shape of input.
func TestDistributionMatchesPercentileOfTheSortedValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := map[string]func(n int) []float64{
		"uniform":    func(n int) []float64 { return fill(n, func(int) float64 { return rng.Float64() * 1000 }) },
		"few values": func(n int) []float64 { return fill(n, func(int) float64 { return float64(rng.IntN(4)) }) },
		"all equal":  func(n int) []float64 { return fill(n, func(int) float64 { return 7 }) },
		"ascending":  func(n int) []float64 { return fill(n, func(i int) float64 { return float64(i) }) },
		"descending": func(n int) []float64 { return fill(n, func(i int) float64 { return float64(-i) }) },
		"organ pipe": func(n int) []float64 { return fill(n, func(i int) float64 { return float64(min(i, n-i)) }) },
		"heavy tail": func(n int) []float64 {
			return fill(n, func(int) float64 { return rng.ExpFloat64() * rng.ExpFloat64() })
		},
	}
	for name, shape := range shapes {
		for _, n := range []int{1, 2, 3, 5, 10, 99, 100, 101, 1000, 4097, 100_000} {
			values := shape(n)
			orig := slices.Clone(values)
			got := distribution(values, "_ms")
			sorted := slices.Clone(values)
			slices.Sort(sorted)
			for _, p := range distributionPercentiles {
				key := fmt.Sprintf("p%d_ms", p)
				if want := round(Percentile(sorted, float64(p)), 3); got[key] != want {
					t.Fatalf("%s, n=%d: %s = %v, want %v", name, n, key, got[key], want)
				}
			}
			if got["min_ms"] != round(sorted[0], 3) || got["max_ms"] != round(sorted[n-1], 3) {
				t.Fatalf("%s, n=%d: min %v max %v", name, n, got["min_ms"], got["max_ms"])
			}
			if !slices.Equal(values, orig) {
				t.Fatalf("%s, n=%d: distribution reordered the builder's values", name, n)
			}
		}
	}
}

func fill(n int, f func(i int) float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

// The run's results are due as soon as its last request ends: a 100,000-request run's
// distributions (1.5 M inter-token gaps among them) must not take a sort's time.
func BenchmarkMetrics100kRequests(b *testing.B) {
	builder := NewBuilder(nil)
	gaps := make([]float64, 15)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		ttft, tpot := rng.Float64()*100, 1+rng.Float64()
		for j := range gaps {
			gaps[j] = rng.Float64() * 10
		}
		builder.Add(loadgen.Record{Successful: true, StartedAtSeconds: float64(i) / 1000, CompletedAtSeconds: float64(i)/1000 + 0.5,
			LatencyMs: rng.Float64() * 1000, TTFTMs: &ttft, TPOTMs: &tpot, InputTokens: 64, OutputTokens: 16}, gaps)
	}
	for b.Loop() {
		builder.Metrics("per-request.jsonl")
	}
}

// BenchmarkReplicates100kRequests is the bootstrap replicates of one 100,000-request repetition
// (what a run computes per repetition after its last request).
func BenchmarkReplicates100kRequests(b *testing.B) {
	builder := NewBuilder(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		ttft, tpot := rng.Float64()*100, 1+rng.Float64()
		builder.Add(loadgen.Record{Successful: true, StartedAtSeconds: float64(i) / 1000, CompletedAtSeconds: float64(i)/1000 + 0.5,
			LatencyMs: 100 + rng.Float64()*1000, TTFTMs: &ttft, TPOTMs: &tpot, InputTokens: 64, OutputTokens: 16}, nil)
	}
	for b.Loop() {
		builder.Replicates(BootstrapReplicates, 7)
	}
}
