package livesummary_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/livesummary"
)

var t0 = time.Unix(1_800_000_000, 0)

// exact is the nearest-rank percentile of sorted values (the definition the sketch bounds).
func exact(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, i)]
}

func within(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: missing, want %.3f", name, want)
	}
	// The sketch's bound is relative to the value of the rank; rounding to 0.001 ms adds a hair.
	if math.Abs(*got-want) > livesummary.RelativeAccuracy*want+0.001 {
		t.Errorf("%s = %.3f, want %.3f within %.0f%%", name, *got, want, 100*livesummary.RelativeAccuracy)
	}
}

// lognormal latencies spread over three orders of magnitude, as real TTFTs do.
func sample(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Exp(r.NormFloat64()*1.2 + 5)
	}
	return out
}

func TestPercentilesWithinTheStatedBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ttft, tpot, e2e := sample(r, 20000), sample(r, 20000), sample(r, 20000)
	s := livesummary.New()
	for i := range ttft {
		s.Add(livesummary.Observation{Successful: true, TTFTMs: ttft[i], TPOTMs: tpot[i] / 10, LatencyMs: e2e[i] * 5, OutputTokens: 10}, t0)
	}
	snap := s.Snapshot(t0)
	for i := range tpot {
		tpot[i] /= 10
		e2e[i] *= 5
	}
	sort.Float64s(ttft)
	sort.Float64s(tpot)
	sort.Float64s(e2e)
	within(t, "ttft p50", snap.TTFTMs.P50, exact(ttft, .5))
	within(t, "ttft p90", snap.TTFTMs.P90, exact(ttft, .9))
	within(t, "ttft p99", snap.TTFTMs.P99, exact(ttft, .99))
	within(t, "tpot p50", snap.TPOTMs.P50, exact(tpot, .5))
	within(t, "tpot p99", snap.TPOTMs.P99, exact(tpot, .99))
	within(t, "e2e p50", snap.LatencyMs.P50, exact(e2e, .5))
	within(t, "e2e p99", snap.LatencyMs.P99, exact(e2e, .99))
	if snap.Requests != 20000 || snap.ErrorRate != 0 || len(snap.TopErrors) != 0 {
		t.Errorf("counts: %+v", snap)
	}
}

// Merging the workers' summaries gives the percentiles of the union, which averaging the
// workers' percentiles does not: one fast and one slow worker.
func TestMergeIsTheSummaryOfTheUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fast, slow := sample(r, 5000), sample(r, 15000)
	for i := range slow {
		slow[i] *= 20
	}
	a, b := livesummary.New(), livesummary.New()
	for _, v := range fast {
		a.Add(livesummary.Observation{Successful: true, TTFTMs: v, LatencyMs: v}, t0)
	}
	for _, v := range slow {
		b.Add(livesummary.Observation{Successful: true, TTFTMs: v, LatencyMs: v}, t0.Add(time.Second))
	}
	// Through the stored form, as a worker's record carries it.
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	decoded := livesummary.New()
	if err := json.Unmarshal(raw, decoded); err != nil {
		t.Fatal(err)
	}
	merged := livesummary.New()
	for _, s := range []*livesummary.Summary{a, decoded} {
		if err := merged.Merge(s); err != nil {
			t.Fatal(err)
		}
	}
	all := append(append([]float64{}, fast...), slow...)
	sort.Float64s(all)
	snap := merged.Snapshot(t0.Add(2 * time.Second))
	within(t, "merged ttft p50", snap.TTFTMs.P50, exact(all, .5))
	within(t, "merged ttft p99", snap.TTFTMs.P99, exact(all, .99))
	within(t, "merged ttft p90", snap.TTFTMs.P90, exact(all, .9))
	avg := (*a.Snapshot(t0).TTFTMs.P50 + *b.Snapshot(t0).TTFTMs.P50) / 2
	if math.Abs(avg-exact(all, .5)) < 0.05*exact(all, .5) {
		t.Fatalf("the data do not tell merging from averaging (average %.1f, union %.1f)", avg, exact(all, .5))
	}
	if snap.Requests != 20000 {
		t.Errorf("merged requests = %d", snap.Requests)
	}
	// Both workers' seconds are in the window: 20000 requests over 2 s of run.
	if got := snap.Throughput.RequestsPerSecond; got != 10000 {
		t.Errorf("window requests/s = %v, want 10000", got)
	}
}

func TestThroughputWindowAndOverall(t *testing.T) {
	s := livesummary.New()
	// 60 s of 2 requests per second with 50 tokens each, then 30 s of 10 per second.
	for sec := range 90 {
		n := 2
		if sec >= 60 {
			n = 10
		}
		for range n {
			s.Add(livesummary.Observation{Successful: true, LatencyMs: 100, OutputTokens: 50}, t0.Add(time.Duration(sec)*time.Second))
		}
	}
	snap := s.Snapshot(t0.Add(90 * time.Second))
	tp := snap.Throughput
	// The window is the 30 seconds (60, 90]: seconds 61..89 hold 10 requests each, second 90
	// none yet.
	if tp.WindowSeconds != 30 || math.Abs(tp.RequestsPerSecond-290.0/30) > 0.001 || math.Abs(tp.OutputTokensPerSecond-290.0*50/30) > 0.001 {
		t.Errorf("window: %+v", tp)
	}
	if want := float64(60*2+30*10) / 90; math.Abs(tp.OverallRequestsPerSecond-want) > 0.001 || math.Abs(tp.OverallOutputTokensPerSec-want*50) > 0.05 {
		t.Errorf("overall: %+v, want %.3f req/s", tp, want)
	}
	// Nothing completed in the last 30 s: the window rate drops to zero, the overall stays.
	later := s.Snapshot(t0.Add(200 * time.Second)).Throughput
	if later.RequestsPerSecond != 0 || later.OverallRequestsPerSecond == 0 {
		t.Errorf("after a quiet minute: %+v", later)
	}
}

func TestErrorsAreCountedAndBounded(t *testing.T) {
	s := livesummary.New()
	status := 503
	for i := range 100 {
		s.Add(livesummary.Observation{Successful: true, TTFTMs: 10, LatencyMs: 20}, t0)
		if i < 40 {
			s.Add(livesummary.Observation{Cause: livesummary.CauseOf("", &status)}, t0)
		}
		if i < 10 {
			s.Add(livesummary.Observation{Cause: "timeout"}, t0)
		}
	}
	for i := range 500 { // many distinct causes stay bounded
		s.Add(livesummary.Observation{Cause: fmt.Sprintf("unique failure %d", i)}, t0)
	}
	snap := s.Snapshot(t0)
	if snap.Requests != 650 || math.Abs(snap.ErrorRate-550.0/650) > 0.0001 {
		t.Errorf("requests %d error rate %v", snap.Requests, snap.ErrorRate)
	}
	if len(snap.TopErrors) != 5 {
		t.Fatalf("top errors: %+v", snap.TopErrors)
	}
	if snap.TopErrors[0] != (livesummary.Cause{Cause: "other causes", Count: 500 - 62}) {
		t.Errorf("first cause: %+v", snap.TopErrors[0])
	}
	if snap.TopErrors[1] != (livesummary.Cause{Cause: "HTTP 503", Count: 40}) || snap.TopErrors[2] != (livesummary.Cause{Cause: "timeout", Count: 10}) {
		t.Errorf("causes: %+v", snap.TopErrors)
	}
	// Failures enter no distribution.
	if *snap.TTFTMs.P99 > 10.2 {
		t.Errorf("ttft p99 %v includes failures", *snap.TTFTMs.P99)
	}
	raw, _ := json.Marshal(s)
	if len(raw) > 16<<10 {
		t.Errorf("stored form is %d bytes", len(raw))
	}
}

func TestEmptySummary(t *testing.T) {
	snap := livesummary.New().Snapshot(t0)
	if snap.TTFTMs.P50 != nil || snap.Throughput.OverallRequestsPerSecond != 0 || snap.TopErrors == nil {
		t.Errorf("empty: %+v", snap)
	}
	raw, _ := json.Marshal(snap)
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil || back["top_errors"] == nil {
		t.Errorf("empty snapshot JSON %s", raw)
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":         `[`,
		"impossible count": `{"requests": 1, "succeeded": 2}`,
		"bad sketch":       `{"ttft": "AAAA//8="}`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(raw), livesummary.New()); err == nil {
				t.Errorf("%s decoded", raw)
			}
		})
	}
}

// FuzzDecode: a stored summary from another process decodes or fails, never panics, and what
// decodes merges and snapshots.
func FuzzDecode(f *testing.F) {
	s := livesummary.New()
	s.Add(livesummary.Observation{Successful: true, TTFTMs: 12, TPOTMs: 3, LatencyMs: 40, OutputTokens: 8}, t0)
	s.Add(livesummary.Observation{Cause: "HTTP 500"}, t0)
	good, _ := json.Marshal(s)
	f.Add(good)
	f.Add([]byte(`{"ttft":"AAAA//8="}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		d := livesummary.New()
		if json.Unmarshal(raw, d) != nil {
			return
		}
		_ = livesummary.New().Merge(d)
		_ = d.Snapshot(t0)
	})
}
