package analysis_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// TestPercentileNearestRank: index ceil(n*p/100)-1 of the sorted successful latencies.
func TestPercentileNearestRank(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, added out of order
	}
	for _, tc := range []struct {
		name                     string
		latencies                []float64
		p50, p90, p95, p99, mean float64
		min, max                 float64
	}{
		{"n=1 every percentile is the value", []float64{7}, 7, 7, 7, 7, 7, 7, 7},
		// n=2: p50 index ceil(1)-1 = 0; p90 index ceil(1.8)-1 = 1.
		{"n=2 p50 is the lower value", []float64{9, 3}, 3, 9, 9, 9, 6, 3, 9},
		// n=100 of 1..100: p50 index 49 -> 50, p90 index 89 -> 90, p99 index 98 -> 99.
		{"n=100 p is the p-th value", hundred, 50, 90, 95, 99, 50.5, 1, 100},
		// n=10: 10*90/100 = 9 exactly, index 8 (a float ceil error would give index 9).
		{"n=10 p90 lands on a whole rank", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, 9, 10, 10, 5.5, 1, 10},
		{"n=3 ties", []float64{4, 4, 1}, 4, 4, 4, 4, 3, 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var records []loadgen.Record
			for i, l := range tc.latencies {
				records = append(records, ok(int64(i+1), float64(i)/10, l))
			}
			d := summarize(t, analysis.Options{}, records...).Latency
			got := []float64{d.P50Ms, d.P90Ms, d.P95Ms, d.P99Ms, d.MeanMs, d.MinMs, d.MaxMs}
			want := []float64{tc.p50, tc.p90, tc.p95, tc.p99, tc.mean, tc.min, tc.max}
			if !slices.Equal(got, want) || d.Count != int64(len(tc.latencies)) {
				t.Errorf("p50,p90,p95,p99,mean,min,max = %v (count %d), want %v", got, d.Count, want)
			}
		})
	}
}

// TestFailureClassification follows NOTES.md: a transport error or timeout, or a non-2xx
// status, fails a request; failures never enter the latency distributions.
func TestFailureClassification(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		rec                    loadgen.Record
		successful, clientErr  int64
		timeoutBin, backendBin int64
		breakdownCode          *int
	}{
		{"2xx without error succeeds", ok(1, 0, 100), 1, 0, 0, 0, ptr(200)},
		{"201 succeeds", func() loadgen.Record { r := ok(1, 0, 100); r.StatusCode = ptr(201); return r }(), 1, 0, 0, 0, ptr(201)},
		{"500 fails as a backend error", failed(1, 0, 100, ptr(500)), 0, 0, 0, 1, ptr(500)},
		{"302 is not 2xx", failed(1, 0, 100, ptr(302)), 0, 0, 0, 1, ptr(302)},
		{"transport error has a null status", failed(1, 0, 100, nil), 0, 1, 1, 0, nil},
		{"200 with a stream error fails", func() loadgen.Record { r := ok(1, 0, 100); r.Error = ptr("stream reset"); return r }(), 0, 0, 0, 1, ptr(200)},
		{"200 the load engine marked unsuccessful fails", func() loadgen.Record { r := ok(1, 0, 100); r.Successful = false; return r }(), 0, 0, 0, 1, ptr(200)},
		{"an empty error string is no error", func() loadgen.Record { r := ok(1, 0, 100); r.Error = ptr(""); return r }(), 1, 0, 0, 0, ptr(200)},
		{"marked successful but 503 fails", func() loadgen.Record { r := failed(1, 0, 100, ptr(503)); r.Successful = true; r.Error = nil; return r }(), 0, 0, 0, 1, ptr(503)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := summarize(t, analysis.Options{}, tc.rec)
			if s.SuccessfulRequests != tc.successful || s.FailedRequests != 1-tc.successful || s.ClientErrorRequests != tc.clientErr {
				t.Errorf("successful %d failed %d client errors %d", s.SuccessfulRequests, s.FailedRequests, s.ClientErrorRequests)
			}
			bin := s.CompletionTimeline[0]
			if bin.ClientTimeoutRequests != tc.timeoutBin || bin.BackendErrorRequests != tc.backendBin || bin.SuccessfulRequests != tc.successful {
				t.Errorf("completion bin = %+v", bin)
			}
			if (s.Latency != nil) != (tc.successful == 1) {
				t.Errorf("latency = %+v, want a distribution only for a success", s.Latency)
			}
			row := s.StatusCodeBreakdown[0]
			if len(s.StatusCodeBreakdown) != 1 || (row.StatusCode == nil) != (tc.breakdownCode == nil) || (row.StatusCode != nil && *row.StatusCode != *tc.breakdownCode) || row.Percentage != 100 {
				t.Errorf("status_code_breakdown = %s", mustJSON(t, s.StatusCodeBreakdown))
			}
		})
	}
}

// TestEmptyAndAllFailedRuns: valid JSON with zeros and nulls, never NaN, Inf or null arrays.
func TestEmptyAndAllFailedRuns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    analysis.Options
		records []loadgen.Record
		bins    int
	}{
		{"empty run without a duration", analysis.Options{}, nil, 0},
		{"empty run with a duration", analysis.Options{DurationSeconds: 60}, nil, 0},
		{"empty run with a schedule", analysis.Options{DurationSeconds: 3, Schedule: slices.Values([]float64{0, 1, 2})}, nil, 3},
		{"every request failed", analysis.Options{DurationSeconds: 2}, []loadgen.Record{failed(1, 0, 50, ptr(503)), failed(2, 1, 50, nil)}, 2},
		{"one request completing at 0", analysis.Options{}, []loadgen.Record{failed(1, 0, 0, nil)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := summarize(t, tc.opts, tc.records...)
			raw := mustJSON(t, s)
			if s.SuccessfulRequests != 0 || s.Latency != nil || s.TTFT != nil || s.TPOT != nil || s.SuccessRate != 0 {
				t.Errorf("summary = %s", raw)
			}
			var generic map[string]any
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"status_code_breakdown", "completion_timeline", "latency_timeline", "ttft_timeline", "tpot_timeline", "throughput_timeline", "error_timeline"} {
				arr, isArray := generic[key].([]any)
				if !isArray {
					t.Errorf("%s = %v, want an array", key, generic[key])
				} else if key != "status_code_breakdown" && len(arr) != tc.bins {
					t.Errorf("%s has %d bins, want %d", key, len(arr), tc.bins)
				}
			}
			if goodput, has := generic["goodput"]; !has || goodput != nil {
				t.Errorf("goodput = %v, want null without an SLO", goodput)
			}
			if timeline, isArray := generic["goodput_timeline"].([]any); !isArray || len(timeline) != 0 {
				t.Errorf("goodput_timeline = %v, want [] without an SLO", generic["goodput_timeline"])
			}
			if len(tc.records) == 0 && (s.Drift != nil || s.ThroughputRPS != 0 || s.DurationSeconds != tc.opts.DurationSeconds) {
				t.Errorf("empty run summary = %s", raw)
			}
		})
	}
}

// TestTimelineBins: min(120, ceil(span)) bins of equal width; a time on an edge opens the next
// bin, the span's end closes the last one, and grace-period completions widen the span.
func TestTimelineBins(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        analysis.Options
		records     []loadgen.Record
		bins        int
		width       float64
		completions []int64
		arrivals    []int64
	}{
		{"edges open the next bin", analysis.Options{DurationSeconds: 3},
			[]loadgen.Record{ok(1, 0, 1000), ok(2, 1, 1000), ok(3, 2, 1000)}, 3, 1, []int64{0, 1, 2}, []int64{1, 1, 1}},
		{"fractional duration rounds the bin count up", analysis.Options{DurationSeconds: 2.5},
			[]loadgen.Record{ok(1, 0, 100), ok(2, 2.4, 100)}, 3, 2.5 / 3, []int64{1, 0, 1}, []int64{1, 0, 1}},
		{"grace-period completions extend the span", analysis.Options{DurationSeconds: 2},
			[]loadgen.Record{ok(1, 0, 100), ok(2, 1.5, 2500)}, 4, 1, []int64{1, 0, 0, 1}, []int64{1, 1, 0, 0}},
		{"long runs cap at 120 bins", analysis.Options{DurationSeconds: 3600},
			[]loadgen.Record{ok(1, 0, 100), ok(2, 29.999, 1), ok(3, 30, 1), ok(4, 3599, 1000)}, 120, 30, nil, nil},
		{"121 seconds still gives 120 bins", analysis.Options{DurationSeconds: 121},
			[]loadgen.Record{ok(1, 0, 100)}, 120, 121.0 / 120, nil, nil},
		{"sub-second run gets one bin", analysis.Options{},
			[]loadgen.Record{ok(1, 0, 100), ok(2, 0.2, 100)}, 1, 0.3, []int64{2}, []int64{2}},
		{"schedule arrivals count requests never sent", analysis.Options{DurationSeconds: 2, Schedule: slices.Values([]float64{0, 0.5, 1.2, 1.9})},
			[]loadgen.Record{ok(1, 0, 100)}, 2, 1, []int64{1, 0}, []int64{2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := summarize(t, tc.opts, tc.records...)
			timeline := s.CompletionTimeline
			if len(timeline) != tc.bins {
				t.Fatalf("%d bins, want %d", len(timeline), tc.bins)
			}
			for i, bin := range timeline {
				assertNear(t, "start", bin.StartSeconds, float64(i)*tc.width)
				assertNear(t, "end", bin.EndSeconds, float64(i+1)*tc.width)
				if tc.completions != nil && bin.CompletedRequests != tc.completions[i] {
					t.Errorf("bin %d completed %d, want %d", i, bin.CompletedRequests, tc.completions[i])
				}
				if tc.arrivals != nil && bin.ArrivedRequests != tc.arrivals[i] {
					t.Errorf("bin %d arrived %d, want %d", i, bin.ArrivedRequests, tc.arrivals[i])
				}
			}
			for name, n := range map[string]int{"latency": len(s.LatencyTimeline), "ttft": len(s.TTFTTimeline), "tpot": len(s.TPOTTimeline), "throughput": len(s.ThroughputTimeline), "error": len(s.ErrorTimeline)} {
				if n != tc.bins {
					t.Errorf("%s timeline has %d bins, want %d like the others", name, n, tc.bins)
				}
			}
			last := timeline[len(timeline)-1]
			if last.CumulativeCompleted != int64(len(tc.records)) {
				t.Errorf("cumulative_completed ends at %d, want %d", last.CumulativeCompleted, len(tc.records))
			}
		})
	}
	t.Run("30 s bins split at 30", func(t *testing.T) {
		s := summarize(t, analysis.Options{DurationSeconds: 3600}, ok(1, 29.999, 0), ok(2, 30, 0))
		if c := s.CompletionTimeline; c[0].CompletedRequests != 1 || c[1].CompletedRequests != 1 {
			t.Errorf("bins 0 and 1 = %+v %+v", c[0], c[1])
		}
	})
}

func TestDriftIsStartedMinusScheduled(t *testing.T) {
	var records []loadgen.Record
	for i, lateMs := range []float64{3, -1, 0, 10, 2} {
		r := ok(int64(i+1), 1, 100)
		r.StartedAtSeconds = 1 + lateMs/1000
		r.CompletedAtSeconds = r.StartedAtSeconds + 0.1
		records = append(records, r)
	}
	// Sorted -1 0 2 3 10: p50 index 2, p90 index ceil(4.5)-1 = 4.
	d := summarize(t, analysis.Options{}, records...).Drift
	if d.P50Ms != 2 || d.P90Ms != 10 || d.P99Ms != 10 {
		t.Errorf("drift = %+v, want p50 2 p90 10 p99 10", *d)
	}
}

func TestGoodputMissingMetrics(t *testing.T) {
	noTTFT := ok(1, 0, 100)
	noTTFT.TTFTMs = nil
	oneToken := ok(2, 0, 100) // TTFT 25 ms
	oneToken.TPOTMs = nil
	slow := ok(3, 0, 10_000) // TPOT 100 ms
	s := summarize(t, analysis.Options{SLO: &analysis.SLO{TTFTSeconds: 1, TPOTSeconds: 0.05}}, noTTFT, oneToken, slow, failed(4, 0, 1, ptr(500)))
	if s.Goodput.GoodRequests != 1 || s.Goodput.ErrorRateSLOMet != nil || s.Goodput.ErrorRateSLOPercent != nil {
		t.Errorf("goodput = %s, want only the one-token request good and no error-rate verdict", mustJSON(t, s.Goodput))
	}
}

func TestSLOFromBackendOptions(t *testing.T) {
	slo, err := analysis.SLOFromBackendOptions(map[string]any{"ttft_slo": 0.5, "tpot_slo": json.Number("0.02"), "error_rate_slo": 1, "threads": 32})
	if err != nil || *slo != (analysis.SLO{TTFTSeconds: 0.5, TPOTSeconds: 0.02, ErrorRatePercent: 1}) {
		t.Errorf("SLO = %+v, %v", slo, err)
	}
	if slo, err := analysis.SLOFromBackendOptions(map[string]any{"threads": 32}); slo != nil || err != nil {
		t.Errorf("no SLO keys gave %+v, %v", slo, err)
	}
	for _, bad := range []map[string]any{{"ttft_slo": "fast"}, {"tpot_slo": -1.0}, {"error_rate_slo": 150.0}, {"ttft_slo": math.Inf(1)}, {"tpot_slo": 1e300}} {
		if _, err := analysis.SLOFromBackendOptions(bad); !errors.Is(err, analysis.ErrInvalidOption) {
			t.Errorf("%v: err = %v, want ErrInvalidOption", bad, err)
		}
	}
}

func TestInvalidInputIsRefused(t *testing.T) {
	if _, err := analysis.New(analysis.Options{DurationSeconds: -1}); !errors.Is(err, analysis.ErrInvalidOption) {
		t.Errorf("negative duration: %v", err)
	}
	for _, duration := range []float64{math.NaN(), math.Inf(1), 1e300} {
		if _, err := analysis.New(analysis.Options{DurationSeconds: duration}); !errors.Is(err, analysis.ErrInvalidOption) {
			t.Errorf("duration %v: %v", duration, err)
		}
	}
	for _, slo := range []analysis.SLO{{TTFTSeconds: math.NaN()}, {TPOTSeconds: -1}, {ErrorRatePercent: 1e300}} {
		if _, err := analysis.New(analysis.Options{SLO: &slo}); !errors.Is(err, analysis.ErrInvalidOption) {
			t.Errorf("SLO %+v: %v", slo, err)
		}
	}
	for name, mutate := range map[string]func(*loadgen.Record){
		"NaN latency":             func(r *loadgen.Record) { r.LatencyMs = math.NaN() },
		"infinite start":          func(r *loadgen.Record) { r.StartedAtSeconds = math.Inf(1) },
		"negative ttft":           func(r *loadgen.Record) { r.TTFTMs = ptr(-1.0) },
		"negative output tokens":  func(r *loadgen.Record) { r.OutputTokens = -3 },
		"completed before start":  func(r *loadgen.Record) { r.CompletedAtSeconds = r.StartedAtSeconds - 1 },
		"status outside HTTP":     func(r *loadgen.Record) { r.StatusCode = ptr(0) },
		"implausibly large value": func(r *loadgen.Record) { r.InputTokens = 1e300 },
	} {
		acc, _ := analysis.New(analysis.Options{})
		rec := ok(7, 2, 100)
		mutate(&rec)
		err := acc.Add(rec)
		if !errors.Is(err, analysis.ErrInvalidRecord) || !strings.Contains(err.Error(), "request 7") {
			t.Errorf("%s: err = %v, want ErrInvalidRecord naming request 7", name, err)
		}
		if acc.Len() != 0 {
			t.Errorf("%s: a refused record was kept", name)
		}
	}
	acc, _ := analysis.New(analysis.Options{Schedule: slices.Values([]float64{0, -2})})
	if _, err := acc.Summary(); !errors.Is(err, analysis.ErrInvalidOption) {
		t.Errorf("negative schedule time: %v", err)
	}
}

// TestSummaryIsRepeatable: Summary is a read; a live summary mid-run does not disturb the final.
func TestSummaryIsRepeatable(t *testing.T) {
	acc, _ := analysis.New(analysis.Options{DurationSeconds: 5})
	for i := range 5 {
		if err := acc.Add(ok(int64(i+1), float64(i), float64(100*(5-i)))); err != nil {
			t.Fatal(err)
		}
		if _, err := acc.Summary(); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := acc.Summary()
	second, _ := acc.Summary()
	if string(mustJSON(t, first)) != string(mustJSON(t, second)) || first.Latency.P50Ms != 300 {
		t.Errorf("summaries differ or p50 %v != 300", first.Latency.P50Ms)
	}
}

func TestLiveCounts(t *testing.T) {
	acc, _ := analysis.New(analysis.Options{})
	for _, rec := range []loadgen.Record{ok(1, 0, 10), failed(2, 0, 10, nil), ok(3, 1, 10)} {
		if err := acc.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if live := acc.Live(); live != (analysis.Live{CompletedRequests: 3, SuccessfulRequests: 2}) {
		t.Errorf("live = %+v", live)
	}
	if raw := string(mustJSON(t, acc.Live())); !strings.Contains(raw, `"completed_requests": 3`) || !strings.Contains(raw, `"successful_requests": 2`) {
		t.Errorf("live JSON = %s", raw)
	}
}
