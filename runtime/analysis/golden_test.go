package analysis_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/lensfn/lensfn/runtime/analysis"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current output")

// smallRunOptions: a 4 s run whose last request completes at 4.5 s (grace period), with SLOs.
var smallRunOptions = analysis.Options{
	DurationSeconds: 4,
	SLO:             &analysis.SLO{TTFTSeconds: 0.15, TPOTSeconds: 0.012, ErrorRatePercent: 10},
}

// TestSmallRunByHand checks testdata/small-run.jsonl against numbers worked out by hand: six
// requests, three successful (200), one 500, one 429, one timeout without a status.
func TestSmallRunByHand(t *testing.T) {
	f, err := os.Open("testdata/small-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := analysis.Summarize(f, smallRunOptions)
	if err != nil {
		t.Fatal(err)
	}
	if s.TotalRequests != 6 || s.SuccessfulRequests != 3 || s.FailedRequests != 3 || s.ClientErrorRequests != 1 {
		t.Fatalf("counts = %d/%d/%d client %d, want 6/3/3 client 1", s.TotalRequests, s.SuccessfulRequests, s.FailedRequests, s.ClientErrorRequests)
	}
	// Window: last completion 4.5 - first start 0.
	for name, pair := range map[string][2]float64{
		"success_rate":          {s.SuccessRate, 50},
		"request_error_rate":    {s.RequestErrorRate, 50},
		"duration_seconds":      {s.DurationSeconds, 4},
		"throughput_rps":        {s.ThroughputRPS, 6 / 4.5},
		"throughput_tps":        {s.ThroughputTPS, 83 / 4.5},
		"input_throughput_tps":  {s.InputThroughputTPS, 850 / 4.5},
		"total_throughput_tps":  {s.TotalThroughputTPS, 933 / 4.5},
		"total_input_tokens":    {s.TotalInputTokens, 850},
		"total_output_tokens":   {s.TotalOutputTokens, 83},
		"effective_concurrency": {s.EffectiveConcurrency, 5.3 / 4.5},
		// Successful latencies 500, 800, 300: p50 index ceil(1.5)-1 = 1, p90 index ceil(2.7)-1 = 2.
		"latency.mean": {s.Latency.MeanMs, 1600.0 / 3}, "latency.p50": {s.Latency.P50Ms, 500},
		"latency.p90": {s.Latency.P90Ms, 800}, "latency.min": {s.Latency.MinMs, 300}, "latency.max": {s.Latency.MaxMs, 800},
		"ttft.p50": {s.TTFT.P50Ms, 100}, "ttft.mean": {s.TTFT.MeanMs, 350.0 / 3},
		// TPOT 10 and 15 (request 5 has one output token): p50 index 0, p90 index ceil(1.8)-1 = 1.
		"tpot.p50": {s.TPOT.P50Ms, 10}, "tpot.p90": {s.TPOT.P90Ms, 15}, "tpot.mean": {s.TPOT.MeanMs, 12.5},
		// Drift 0, 2, 1, 0, 4, 0 ms: p50 index 2 of sorted [0 0 0 1 2 4], p90 index 5.
		"drift.p50": {s.Drift.P50Ms, 0}, "drift.p90": {s.Drift.P90Ms, 4}, "drift.p99": {s.Drift.P99Ms, 4},
		"goodput.good_request_percent": {s.Goodput.GoodRequestPercent, 100.0 / 3},
		"goodput.goodput_rps":          {s.Goodput.GoodputRPS, 2 / 4.5},
	} {
		assertNear(t, name, pair[0], pair[1])
	}
	if s.Latency.Count != 3 || s.TTFT.Count != 3 || s.TPOT.Count != 2 {
		t.Errorf("distribution counts %d/%d/%d, want 3/3/2", s.Latency.Count, s.TTFT.Count, s.TPOT.Count)
	}
	// Request 1 meets both SLOs, 2 misses TTFT (200 > 150 ms), 5 has no TPOT so only TTFT counts.
	if g := s.Goodput; g.GoodRequests != 2 || g.ErrorRateSLOMet == nil || *g.ErrorRateSLOMet || *g.TTFTSLOMs != 150 || *g.TPOTSLOMs != 12 {
		t.Errorf("goodput = %+v", *g)
	}

	wantCodes := []struct {
		code  *int
		count int64
	}{{ptr(200), 3}, {ptr(429), 1}, {ptr(500), 1}, {nil, 1}}
	if len(s.StatusCodeBreakdown) != len(wantCodes) {
		t.Fatalf("status_code_breakdown = %+v", s.StatusCodeBreakdown)
	}
	for i, want := range wantCodes {
		got := s.StatusCodeBreakdown[i]
		if (got.StatusCode == nil) != (want.code == nil) || (got.StatusCode != nil && *got.StatusCode != *want.code) || got.Count != want.count {
			t.Errorf("breakdown[%d] = %v x%d, want %v x%d", i, got.StatusCode, got.Count, want.code, want.count)
		}
		assertNear(t, "percentage", got.Percentage, float64(want.count)/6*100)
	}

	// Span max(4, 4.5) = 4.5 s: five bins of 0.9 s. Arrivals by schedule 0, .5 | 1, 1.5 | 2 | 3;
	// completions .5 | 1.201 (500), 1.302 | 2.304 | 3.5 (timeout) | 4.5 (429, the closing edge).
	want := []analysis.CompletionBin{
		{ArrivedRequests: 2, CompletedRequests: 1, SuccessfulRequests: 1, CumulativeArrived: 2, CumulativeCompleted: 1},
		{ArrivedRequests: 2, CompletedRequests: 2, SuccessfulRequests: 1, FailedRequests: 1, BackendErrorRequests: 1, CumulativeArrived: 4, CumulativeCompleted: 3},
		{ArrivedRequests: 1, CompletedRequests: 1, SuccessfulRequests: 1, CumulativeArrived: 5, CumulativeCompleted: 4},
		{ArrivedRequests: 1, CompletedRequests: 1, FailedRequests: 1, ClientTimeoutRequests: 1, CumulativeArrived: 6, CumulativeCompleted: 5},
		{CompletedRequests: 1, FailedRequests: 1, BackendErrorRequests: 1, CumulativeArrived: 6, CumulativeCompleted: 6},
	}
	if len(s.CompletionTimeline) != len(want) {
		t.Fatalf("completion_timeline has %d bins, want %d", len(s.CompletionTimeline), len(want))
	}
	for i, got := range s.CompletionTimeline {
		assertNear(t, "start_seconds", got.StartSeconds, 0.9*float64(i))
		assertNear(t, "end_seconds", got.EndSeconds, 0.9*float64(i+1))
		got.StartSeconds, got.EndSeconds = 0, 0
		if got != want[i] {
			t.Errorf("completion bin %d = %+v, want %+v", i, got, want[i])
		}
	}

	// Latency by send time: bin 0 holds requests 1 and 2 (500, 800 ms), bin 2 request 5.
	lt := s.LatencyTimeline
	if lt[0].RequestCount != 2 || *lt[0].AverageLatencyMs != 650 || *lt[0].P95LatencyMs != 800 ||
		lt[1].RequestCount != 0 || lt[1].AverageLatencyMs != nil || *lt[2].P95LatencyMs != 300 || lt[4].P95LatencyMs != nil {
		t.Errorf("latency_timeline = %s", mustJSON(t, lt))
	}
	assertNear(t, "latency_timeline[1].request_arrival_rps", lt[1].RequestArrivalRPS, 2/0.9)
	if tp := s.TPOTTimeline; tp[0].RequestCount != 2 || *tp[0].AverageLatencyMs != 12.5 || tp[2].RequestCount != 0 {
		t.Errorf("tpot_timeline = %s", mustJSON(t, tp))
	}
	for i, wantFailed := range []int64{0, 1, 0, 1, 1} {
		e, th := s.ErrorTimeline[i], s.ThroughputTimeline[i]
		if e.FailedRequests != wantFailed {
			t.Errorf("error bin %d failed = %d, want %d", i, e.FailedRequests, wantFailed)
		}
		if th.Completed != want[i].CompletedRequests {
			t.Errorf("throughput bin %d completed = %d, want %d", i, th.Completed, want[i].CompletedRequests)
		}
	}
	if e := s.ErrorTimeline; e[1].ErrorRatePercent != 50 || e[4].ErrorRatePercent != 100 || e[4].CumulativeFailures != 3 {
		t.Errorf("error_timeline = %s", mustJSON(t, e))
	}
	if th := s.ThroughputTimeline; th[0].OutputTokens != 41 || th[1].OutputTokens != 41 || th[2].OutputTokens != 1 || th[0].Arrived != 2 {
		t.Errorf("throughput_timeline = %s", mustJSON(t, th))
	}
	if g := s.GoodputTimeline; len(g) != 5 || g[0].GoodRequests != 1 || g[1].GoodRequests != 0 || g[1].CompletedRequests != 2 || g[2].GoodRequests != 1 {
		t.Errorf("goodput_timeline = %s", mustJSON(t, g))
	}
}

// TestSmallRunGolden pins the whole summary.json of the small run (reviewed by hand against
// TestSmallRunByHand); run with -update after an intended change.
func TestSmallRunGolden(t *testing.T) {
	f, err := os.Open("testdata/small-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := analysis.Summarize(f, smallRunOptions)
	if err != nil {
		t.Fatal(err)
	}
	got := append(mustJSON(t, s), '\n')
	const golden = "testdata/small-run.summary.golden.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("summary differs from %s (run go test -update to accept):\n%s", golden, got)
	}
}
