package comparison

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// lat builds latency_distributions from "dist.stat" → value.
func lat(values map[string]float64) map[string]any {
	out := map[string]any{}
	for k, v := range values {
		dist, stat, _ := strings.Cut(k, ".")
		d, _ := out[dist].(map[string]any)
		if d == nil {
			d = map[string]any{}
			out[dist] = d
		}
		d[stat+"_ms"] = v
	}
	return out
}

// stageMetrics is a stage's metrics: throughput, distributions, tokens and duration.
func stageMetrics(tps float64, dists map[string]float64, tokens, seconds float64) map[string]any {
	return map[string]any{"throughput_tps": tps, "latency_distributions": lat(dists),
		"total_output_tokens": tokens, "benchmark_time_seconds": seconds}
}

func rateStage(rate any, m map[string]any) map[string]any {
	return map[string]any{"rate": rate, "duration": 60.0, "metrics": m}
}

func f(v float64) *float64 { return &v }
func s(v string) *string   { return &v }
func i(v int) *int         { return &v }

func value(t *testing.T, v Values, key string) any {
	t.Helper()
	x, ok := v.Get(key)
	if !ok {
		return "absent"
	}
	if x == nil {
		return nil
	}
	return *x
}

// TestWorkedMatrixExample checks every statistic of a two-stage matrix against numbers worked
// out by hand:
//
//	concurrency 1: guide tps 200, ttft mean/p90/p99 50/80/100, tpot mean 10, latency mean 700,
//	               2000 tokens in 10 s; baseline tps 100, ttft 100/100/200, tpot 10, latency 1000,
//	               1000 tokens in 10 s
//	concurrency 8: guide tps 800, ttft 30/40/50, tpot 20, latency 1000, 8000 tokens in 10 s;
//	               baseline tps 200, ttft 120/80/100, tpot 10, latency 2000, 3000 tokens in 20 s
//
// Mean ratios: c1 tps 2, ttft 0.5, tpot 1, latency 0.7; c8 tps 4, ttft 0.25, tpot 2, latency 0.5.
// Geometric means: tps √8 = 2.8284, ttft √0.125 = 0.3536, tpot √2 = 1.4142, latency √0.35 =
// 0.5916; p90 ttft √(0.8·0.5) = 0.6325; p99 ttft √(0.5·0.5) = 0.5; tpot and latency have no
// p90/p99 values, so those metrics are absent. Suite throughput (10000/20)/(4000/30) = 3.75.
// Grouped (arithmetic) means for isl "128": tps 3, ttft 0.375, tpot 1.5, latency 0.6.
func TestWorkedMatrixExample(t *testing.T) {
	g1 := stageMetrics(200, map[string]float64{"ttft.mean": 50, "ttft.p90": 80, "ttft.p99": 100, "tpot.mean": 10, "request_latency.mean": 700}, 2000, 10)
	g1["ttft_ms"] = 45.123456 // the p50 headline the matrix quirk shows unrounded
	b1 := stageMetrics(100, map[string]float64{"ttft.mean": 100, "ttft.p90": 100, "ttft.p99": 200, "tpot.mean": 10, "request_latency.mean": 1000}, 1000, 10)
	b1["ttft_ms"] = 90.0
	g8 := stageMetrics(800, map[string]float64{"ttft.mean": 30, "ttft.p90": 40, "ttft.p99": 50, "tpot.mean": 20, "request_latency.mean": 1000}, 8000, 10)
	b8 := stageMetrics(200, map[string]float64{"ttft.mean": 120, "ttft.p90": 80, "ttft.p99": 100, "tpot.mean": 10, "request_latency.mean": 2000}, 3000, 20)
	point := func(stages ...map[string]any) []any {
		list := make([]any, len(stages))
		for k, st := range stages {
			list[k] = st
		}
		return []any{map[string]any{"isl": 128.0, "osl": 64.0, "status": "succeeded", "metrics": map[string]any{}, "stage_metrics": list}}
	}
	guide := point(map[string]any{"concurrency": 1.0, "num_requests": 32.0, "metrics": g1}, map[string]any{"concurrency": 8.0, "num_requests": 96.0, "metrics": g8})
	// The baseline lists its stages in the other order: matching is by concurrency, not position.
	baseline := point(map[string]any{"concurrency": 8.0, "num_requests": 96.0, "metrics": b8}, map[string]any{"concurrency": 1.0, "num_requests": 32.0, "metrics": b1})

	st := MatrixStatistics(guide, baseline)
	if st == nil || st.CaseCount == nil || *st.CaseCount != 2 || st.StageCount != nil {
		t.Fatalf("statistics = %+v, want 2 matrix rows", st)
	}
	r0 := st.Rows[0]
	if got := r0.Dimensions.Keys(); !reflect.DeepEqual(got, []string{"isl", "osl", "concurrency", "num_requests"}) {
		t.Errorf("row dimensions %v", got)
	}
	if c, _ := st.Rows[1].Dimensions.Get("concurrency"); c != 8.0 {
		t.Errorf("rows do not follow the guide's order: second row concurrency %v", c)
	}
	wantRatio := map[string]any{"throughput_tps": 2.0, "ttft_ms": 0.5, "tpot_ms": 1.0, "request_latency_ms": 0.7}
	for k, w := range wantRatio {
		if got := value(t, r0.Ratio, k); got != w {
			t.Errorf("row 0 ratio %s = %v, want %v", k, got, w)
		}
	}
	// Matrix quirk: guide/baseline are the unrounded top-level fields, nulls included.
	if got := value(t, r0.Guide, "ttft_ms"); got != 45.123456 {
		t.Errorf("matrix guide ttft_ms = %v, want the unrounded p50 45.123456", got)
	}
	if got := value(t, r0.Guide, "tpot_ms"); got != nil {
		t.Errorf("matrix guide tpot_ms = %v, want null (no top-level field)", got)
	}
	if got := r0.Guide.Keys(); !reflect.DeepEqual(got, []string{"throughput_tps", "ttft_ms", "tpot_ms", "request_latency_ms"}) {
		t.Errorf("matrix guide keys %v", got)
	}
	if got := value(t, r0.GuideP90, "ttft_ms"); got != 80.0 {
		t.Errorf("guide_p90 ttft = %v", got)
	}
	if got := value(t, r0.RatioP90, "tpot_ms"); got != "absent" {
		t.Errorf("ratio_p90 tpot = %v, want absent (no p90 values)", got)
	}
	checks := []struct {
		name string
		v    Values
		key  string
		want any
	}{
		{"gm tps", st.GeometricMeanRatio, "throughput_tps", 2.8284},
		{"gm ttft", st.GeometricMeanRatio, "ttft_ms", 0.3536},
		{"gm tpot", st.GeometricMeanRatio, "tpot_ms", 1.4142},
		{"gm latency", st.GeometricMeanRatio, "request_latency_ms", 0.5916},
		{"gm p90 tps", st.GeometricMeanRatioP90, "throughput_tps", 2.8284},
		{"gm p90 ttft", st.GeometricMeanRatioP90, "ttft_ms", 0.6325},
		{"gm p90 tpot", st.GeometricMeanRatioP90, "tpot_ms", "absent"},
		{"gm p99 ttft", st.GeometricMeanRatioP99, "ttft_ms", 0.5},
		{"gm p99 latency", st.GeometricMeanRatioP99, "request_latency_ms", "absent"},
	}
	for _, c := range checks {
		if got := value(t, c.v, c.key); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	if st.SuiteNormalizedThroughputRatio == nil || *st.SuiteNormalizedThroughputRatio != 3.75 {
		t.Errorf("suite-normalized throughput = %v, want 3.75", st.SuiteNormalizedThroughputRatio)
	}
	g := st.GroupedRatio
	if g == nil {
		t.Fatal("no grouped_ratio on matrix statistics")
	}
	isl, _ := g.ISL.Get("128")
	for k, w := range map[string]float64{"throughput_tps": 3, "ttft_ms": 0.375, "tpot_ms": 1.5, "request_latency_ms": 0.6} {
		if got := value(t, isl, k); got != w {
			t.Errorf("grouped isl 128 %s = %v, want %v", k, got, w)
		}
	}
	if got := g.Concurrency.Keys(); !reflect.DeepEqual(got, []string{"1", "8"}) {
		t.Errorf("grouped concurrency keys %v", got)
	}
	c8, _ := g.Concurrency.Get("8")
	if got := value(t, c8, "ttft_ms"); got != 0.25 {
		t.Errorf("grouped concurrency 8 ttft = %v", got)
	}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"case_count":2,"rows":[{"isl":128,"osl":64,"concurrency":1,"num_requests":32,"guide":{"throughput_tps":200,"ttft_ms":45.123456,"tpot_ms":null,"request_latency_ms":null},"baseline":`,
		`"geometric_mean_ratio":{"throughput_tps":2.8284,"ttft_ms":0.3536,"tpot_ms":1.4142,"request_latency_ms":0.5916}`,
		`"suite_normalized_throughput_ratio":3.75,"grouped_ratio":{"isl":{"128":{"throughput_tps":3,`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s\n%s", want, data)
		}
	}
}

func rates(t *testing.T, st *Statistics) []any {
	t.Helper()
	if st == nil {
		return nil
	}
	var out []any
	for _, r := range st.Rows {
		v, _ := r.Dimensions.Get("rate")
		out = append(out, v)
	}
	return out
}

func TestMatching(t *testing.T) {
	m := func() map[string]any { return stageMetrics(10, map[string]float64{"ttft.mean": 5}, 100, 1) }
	cases := []struct {
		name            string
		guide, baseline []any
		want            []any // matched rates in row order; nil: statistics null
	}{
		{"unique keys match, rows follow the guide's order",
			[]any{rateStage(2.0, m()), rateStage(1.0, m())}, []any{rateStage(1.0, m()), rateStage(2.0, m())}, []any{2.0, 1.0}},
		{"a duplicate on the guide side never matches",
			[]any{rateStage(1.0, m()), rateStage(1.0, m()), rateStage(2.0, m())}, []any{rateStage(1.0, m()), rateStage(2.0, m())}, []any{2.0}},
		{"a duplicate on the baseline side never matches",
			[]any{rateStage(1.0, m()), rateStage(2.0, m())}, []any{rateStage(1.0, m()), rateStage(2.0, m()), rateStage(2.0, m())}, []any{1.0}},
		{"a missing key never matches",
			[]any{map[string]any{"metrics": m()}, rateStage(1.0, m())}, []any{map[string]any{"metrics": m()}, rateStage(1.0, m())}, []any{1.0}},
		{"a null key never matches",
			[]any{rateStage(nil, m())}, []any{rateStage(nil, m())}, nil},
		{"a NaN key never matches",
			[]any{rateStage(math.NaN(), m()), rateStage(1.0, m())}, []any{rateStage(math.NaN(), m()), rateStage(1.0, m())}, []any{1.0}},
		{"an infinite key never matches",
			[]any{rateStage(math.Inf(1), m())}, []any{rateStage(math.Inf(1), m())}, nil},
		{"a negative key never matches",
			[]any{rateStage(-1.0, m()), rateStage(0.0, m())}, []any{rateStage(-1.0, m()), rateStage(0.0, m())}, []any{0.0}},
		{"a string key is not a number",
			[]any{rateStage("1", m())}, []any{rateStage("1", m())}, nil},
		{"a bool key is not a number",
			[]any{rateStage(true, m())}, []any{rateStage(true, m())}, nil},
		{"integers and floats of one value match",
			[]any{rateStage(3, m())}, []any{rateStage(3.0, m())}, []any{3.0}},
		{"array position is never a fallback",
			[]any{rateStage(1.0, m())}, []any{rateStage(5.0, m())}, nil},
		{"a non-object stage is skipped",
			[]any{"junk", rateStage(1.0, m())}, []any{rateStage(1.0, m()), 7.0}, []any{1.0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := RateStageStatistics(c.guide, c.baseline)
			got := rates(t, st)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("matched rates %v, want %v", got, c.want)
			}
			if st != nil && (st.StageCount == nil || *st.StageCount != len(c.want) || st.CaseCount != nil || st.GroupedRatio != nil) {
				t.Errorf("stage_count %v case_count %v grouped %v", st.StageCount, st.CaseCount, st.GroupedRatio)
			}
		})
	}
}

func TestMatrixMatching(t *testing.T) {
	stage := func(c any) map[string]any {
		return map[string]any{"concurrency": c, "num_requests": 10.0, "metrics": stageMetrics(10, nil, 10, 1)}
	}
	pt := func(isl, osl any, status string, stages ...any) map[string]any {
		return map[string]any{"isl": isl, "osl": osl, "status": status, "stage_metrics": stages}
	}
	type dims struct{ isl, osl, c any }
	cases := []struct {
		name            string
		guide, baseline []any
		want            []dims
	}{
		{"points join on (isl, osl), stages on concurrency",
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0), stage(4.0)), pt(200.0, 10.0, "succeeded", stage(1.0))},
			[]any{pt(200.0, 10.0, "succeeded", stage(1.0)), pt(100.0, 10.0, "succeeded", stage(4.0), stage(2.0))},
			[]dims{{100.0, 10.0, 4.0}, {200.0, 10.0, 1.0}}},
		{"failed points are filtered before matching",
			[]any{pt(100.0, 10.0, "failed", stage(1.0)), pt(200.0, 10.0, "succeeded", stage(1.0))},
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0)), pt(200.0, 10.0, "succeeded", stage(1.0))},
			[]dims{{200.0, 10.0, 1.0}}},
		{"a failed duplicate does not make the key ambiguous",
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0)), pt(100.0, 10.0, "failed", stage(1.0))},
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0))},
			[]dims{{100.0, 10.0, 1.0}}},
		{"duplicate (isl, osl) points never match",
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0)), pt(100.0, 10.0, "succeeded", stage(2.0))},
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0))}, nil},
		{"same isl, different osl are different points",
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0)), pt(100.0, 20.0, "succeeded", stage(1.0))},
			[]any{pt(100.0, 20.0, "succeeded", stage(1.0))},
			[]dims{{100.0, 20.0, 1.0}}},
		{"duplicate concurrency inside a point never matches",
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0), stage(1.0), stage(2.0))},
			[]any{pt(100.0, 10.0, "succeeded", stage(1.0), stage(2.0))},
			[]dims{{100.0, 10.0, 2.0}}},
		{"missing or negative osl never matches",
			[]any{pt(100.0, nil, "succeeded", stage(1.0)), pt(100.0, -5.0, "succeeded", stage(1.0))},
			[]any{pt(100.0, nil, "succeeded", stage(1.0)), pt(100.0, -5.0, "succeeded", stage(1.0))}, nil},
		{"a NaN concurrency never matches",
			[]any{pt(100.0, 10.0, "succeeded", stage(math.NaN()))},
			[]any{pt(100.0, 10.0, "succeeded", stage(math.NaN()))}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := MatrixStatistics(c.guide, c.baseline)
			var got []dims
			if st != nil {
				for _, r := range st.Rows {
					isl, _ := r.Dimensions.Get("isl")
					osl, _ := r.Dimensions.Get("osl")
					cc, _ := r.Dimensions.Get("concurrency")
					got = append(got, dims{isl, osl, cc})
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("rows %v, want %v", got, c.want)
			}
		})
	}
}

func TestRatioRules(t *testing.T) {
	pair := func(g, b map[string]any) *Statistics {
		return RateStageStatistics([]any{rateStage(1.0, g)}, []any{rateStage(1.0, b)})
	}
	t.Run("a zero baseline gives no ratio; a zero guide value is kept and zeroes the geometric mean", func(t *testing.T) {
		st := RateStageStatistics(
			[]any{rateStage(1.0, stageMetrics(0, map[string]float64{"ttft.mean": 10}, 0, 1)), rateStage(2.0, stageMetrics(50, map[string]float64{"ttft.mean": 10}, 0, 1))},
			[]any{rateStage(1.0, stageMetrics(100, map[string]float64{"ttft.mean": 0}, 0, 1)), rateStage(2.0, stageMetrics(100, map[string]float64{"ttft.mean": 20}, 0, 1))})
		if got := value(t, st.Rows[0].Ratio, "throughput_tps"); got != 0.0 {
			t.Errorf("zero-guide ratio = %v, want 0", got)
		}
		if got := value(t, st.Rows[0].Ratio, "ttft_ms"); got != "absent" {
			t.Errorf("zero-baseline ratio = %v, want absent", got)
		}
		if got := value(t, st.GeometricMeanRatio, "throughput_tps"); got != 0.0 {
			t.Errorf("geometric mean with a zero = %v, want 0.0", got)
		}
		if got := value(t, st.GeometricMeanRatio, "ttft_ms"); got != 0.5 {
			t.Errorf("geometric mean over the remaining ttft ratio = %v, want 0.5", got)
		}
	})
	t.Run("a non-finite ratio is omitted", func(t *testing.T) {
		st := pair(stageMetrics(1e308, nil, 0, 1), stageMetrics(1e-308, nil, 0, 1))
		if got := value(t, st.Rows[0].Ratio, "throughput_tps"); got != "absent" {
			t.Errorf("overflowing ratio = %v", got)
		}
		if len(st.GeometricMeanRatio) != 0 {
			t.Errorf("geometric mean of no ratios: %v, want {}", st.GeometricMeanRatio.Keys())
		}
	})
	t.Run("a negative ratio stays in the row but not in the geometric mean", func(t *testing.T) {
		st := RateStageStatistics(
			[]any{rateStage(1.0, stageMetrics(-10, nil, 0, 1)), rateStage(2.0, stageMetrics(40, nil, 0, 1))},
			[]any{rateStage(1.0, stageMetrics(10, nil, 0, 1)), rateStage(2.0, stageMetrics(10, nil, 0, 1))})
		if got := value(t, st.Rows[0].Ratio, "throughput_tps"); got != -1.0 {
			t.Errorf("negative ratio = %v", got)
		}
		if got := value(t, st.GeometricMeanRatio, "throughput_tps"); got != 4.0 {
			t.Errorf("geometric mean = %v, want 4 (the negative ratio excluded)", got)
		}
	})
	t.Run("non-numbers are no values", func(t *testing.T) {
		g := stageMetrics(10, nil, 0, 1)
		g["throughput_tps"] = true
		g["latency_distributions"] = map[string]any{"ttft": map[string]any{"mean_ms": "5"}, "tpot": map[string]any{"mean_ms": math.NaN()}}
		st := pair(g, stageMetrics(10, map[string]float64{"ttft.mean": 5, "tpot.mean": 5}, 0, 1))
		if len(st.Rows[0].Guide) != 0 || len(st.Rows[0].Ratio) != 0 {
			t.Errorf("guide %v ratio %v, want both empty", st.Rows[0].Guide.Keys(), st.Rows[0].Ratio.Keys())
		}
		if got := value(t, st.Rows[0].Baseline, "ttft_ms"); got != 5.0 {
			t.Errorf("baseline ttft = %v", got)
		}
	})
	t.Run("side values and ratios are rounded to 4 places, geometric means computed unrounded", func(t *testing.T) {
		st := RateStageStatistics(
			[]any{rateStage(1.0, stageMetrics(1.23456789, nil, 0, 1)), rateStage(2.0, stageMetrics(1, nil, 0, 1))},
			[]any{rateStage(1.0, stageMetrics(3, nil, 0, 1)), rateStage(2.0, stageMetrics(3, nil, 0, 1))})
		if got := value(t, st.Rows[0].Guide, "throughput_tps"); got != 1.2346 {
			t.Errorf("guide value = %v, want 1.2346", got)
		}
		if got := value(t, st.Rows[0].Ratio, "throughput_tps"); got != 0.4115 {
			t.Errorf("ratio = %v, want 0.4115", got)
		}
		// sqrt(1.23456789/3 * 1/3) = 0.37037...; from the rounded ratios sqrt(0.4115*0.3333) = 0.37034...
		if got := value(t, st.GeometricMeanRatio, "throughput_tps"); got != 0.3704 {
			t.Errorf("geometric mean = %v, want 0.3704 (0.3703 would mean the rounded ratios were used)", got)
		}
	})
	t.Run("rate rows keep their guide and baseline values (no matrix quirk)", func(t *testing.T) {
		g := stageMetrics(10, map[string]float64{"ttft.mean": 4}, 0, 1)
		g["ttft_ms"] = 3.0
		st := pair(g, stageMetrics(5, map[string]float64{"ttft.mean": 8}, 0, 1))
		if got := value(t, st.Rows[0].Guide, "ttft_ms"); got != 4.0 {
			t.Errorf("rate guide ttft = %v, want the mean 4", got)
		}
		if got := st.Rows[0].Dimensions.Keys(); !reflect.DeepEqual(got, []string{"rate", "duration"}) {
			t.Errorf("rate dimensions %v", got)
		}
	})
}

func TestSuiteNormalizedThroughput(t *testing.T) {
	cases := []struct {
		name       string
		g, b       [][2]any // (tokens, seconds) per stage
		want       *float64
		wantRounds float64
	}{
		{"pairs sum per side", [][2]any{{100.0, 10.0}, {300.0, 10.0}}, [][2]any{{100.0, 20.0}, {100.0, 20.0}}, f(4), 0},
		{"a pair with negative tokens is skipped", [][2]any{{-1.0, 10.0}, {300.0, 10.0}}, [][2]any{{100.0, 10.0}, {100.0, 10.0}}, f(3), 0},
		{"a pair with zero duration on one side is skipped", [][2]any{{100.0, 10.0}, {300.0, 10.0}}, [][2]any{{100.0, 0.0}, {100.0, 10.0}}, f(3), 0},
		{"zero tokens qualify", [][2]any{{0.0, 10.0}}, [][2]any{{100.0, 10.0}}, f(0), 0},
		{"no qualifying pair is null", [][2]any{{nil, 10.0}}, [][2]any{{100.0, 10.0}}, nil, 0},
		{"a zero baseline throughput is null", [][2]any{{100.0, 10.0}}, [][2]any{{0.0, 10.0}}, nil, 0},
		{"rounded to 5 places", [][2]any{{100.0, 3.0}}, [][2]any{{100.0, 7.0}}, f(2.33333), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			side := func(stages [][2]any) []any {
				var out []any
				for k, st := range stages {
					out = append(out, rateStage(float64(k+1), map[string]any{"throughput_tps": 1.0, "total_output_tokens": st[0], "benchmark_time_seconds": st[1]}))
				}
				return out
			}
			st := RateStageStatistics(side(c.g), side(c.b))
			got := st.SuiteNormalizedThroughputRatio
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Errorf("suite ratio %v, want %v", deref(got), deref(c.want))
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestRoundLikePython(t *testing.T) {
	for _, c := range []struct {
		x      float64
		places int
		want   float64
	}{
		{2.675, 2, 2.67}, // 2.675 is 2.67499999... in binary
		{0.125, 2, 0.12}, // an exact tie goes to even
		{0.375, 2, 0.38}, // an exact tie goes to even
		{0.285, 2, 0.28}, // 0.285 is 0.28499999... in binary
		{-0.00001, 2, 0}, // no negative zero
		{123.456789, 4, 123.4568},
	} {
		if got := round(c.x, c.places); got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("round(%v, %d) = %v, want %v", c.x, c.places, got, c.want)
		}
	}
}

// guideCase and baselineCase are two comparable cases of one scenario.
func facts(model string, replicas, tp int) Facts {
	return Facts{Model: s(model), Runtime: s("vllm"), Accelerator: s("H100"), Replicas: i(replicas), TensorParallelSize: i(tp),
		DecodeReplicas: i(replicas), DecodeTensorParallelSize: i(tp)}
}

func TestComparisonWithoutBaseline(t *testing.T) {
	r := Build([]Case{{ID: "guide-1", Role: RoleGuide, ProviderRef: "optimized-baseline", ScenarioID: "sc", WorkloadID: "plan--sc",
		Metrics: map[string]any{"throughput_tps": 10.0}}}, Options{CompareConfigurations: true}, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	if len(r.Comparisons) != 1 {
		t.Fatalf("%d comparisons, want 1", len(r.Comparisons))
	}
	data, _ := json.Marshal(r.Comparisons[0])
	for _, want := range []string{`"scenario_name":null`, `"sla":{"met":null,"checks":{}}`, `"guide":"optimized-baseline"`,
		`"baseline_configuration":{}`, `"baseline_case_id":null,"baseline_type":null,"parity":{"valid":false,"checks":{}}`,
		`"baseline_metrics":{},"delta_percent":{},"mechanism_delta_percent":{},"matrix_statistics":null,"rate_stage_statistics":null`,
		`"benchmark":{}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("comparison lacks %s\n%s", want, data)
		}
	}
	if len(r.TopologyComparisons) != 0 {
		t.Errorf("one guide has no topology pair")
	}
	top, _ := json.Marshal(r)
	if !strings.HasPrefix(string(top), `{"generated_at":"2026-12-01T10:00:00+00:00","comparison_version":2,"comparisons":[`) ||
		!strings.HasSuffix(string(top), `"topology_comparisons":[]}`) {
		t.Errorf("top level %s", top)
	}
}

func TestComparisonKeysInOrder(t *testing.T) {
	r := Build([]Case{
		{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, Facts: facts("m", 4, 1), Metrics: map[string]any{}},
		{ID: "b", Role: RoleBaseline, Facts: facts("m", 4, 1), Metrics: map[string]any{}},
	}, Options{CompareConfigurations: true}, time.Now())
	data, _ := json.Marshal(r.Comparisons[0])
	var keys Ordered[json.RawMessage]
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	want := []string{"workload_id", "scenario_id", "scenario_name", "sla", "guide", "guide_configuration", "baseline_configuration",
		"guide_case_id", "baseline_case_id", "baseline_type", "parity", "guide_metrics", "baseline_metrics", "delta_percent",
		"mechanism_delta_percent", "matrix_statistics", "rate_stage_statistics", "significance", "mechanisms"}
	if !reflect.DeepEqual(keys.Keys(), want) {
		t.Errorf("comparison keys\n%v\nwant\n%v", keys.Keys(), want)
	}
	fc, _ := keys.Get("guide_configuration")
	var fk Ordered[json.RawMessage]
	_ = json.Unmarshal(fc, &fk)
	wantFacts := []string{"configuration_artifact_id", "model", "guide", "guide_variant", "runtime", "accelerator", "image", "replicas",
		"tensor_parallel_size", "decode_replicas", "decode_tensor_parallel_size", "prefill_replicas", "prefill_tensor_parallel_size", "benchmark"}
	if !reflect.DeepEqual(fk.Keys(), wantFacts) {
		t.Errorf("facts keys %v", fk.Keys())
	}
	p, _ := keys.Get("parity")
	if string(p) != `{"valid":true,"checks":{"model":true,"runtime":true,"accelerator_type":true,"accelerator_count":true,"workload":true},"reasons":[],"guide_accelerators":4,"baseline_accelerators":4}` {
		t.Errorf("parity %s (neither side has a benchmark: both run the defaults)", p)
	}
}

func TestBaselinesAndTypes(t *testing.T) {
	r := Build([]Case{
		{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b1", "missing", "b2"}},
		{ID: "b1", Role: RoleBaseline},
		{ID: "b2", Role: RoleBaseline, BaselineType: "kubernetes-service"},
	}, Options{CompareConfigurations: true}, time.Now())
	if len(r.Comparisons) != 2 {
		t.Fatalf("%d comparisons, want 2 (an unknown baseline id is skipped)", len(r.Comparisons))
	}
	if *r.Comparisons[0].BaselineType != "direct-vllm" || *r.Comparisons[1].BaselineType != "kubernetes-service" {
		t.Errorf("baseline types %v %v", *r.Comparisons[0].BaselineType, *r.Comparisons[1].BaselineType)
	}
	if *r.Comparisons[1].BaselineCaseID != "b2" {
		t.Errorf("baseline case id %v", *r.Comparisons[1].BaselineCaseID)
	}
	r = Build([]Case{{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"missing"}}}, Options{CompareConfigurations: true}, time.Now())
	if len(r.Comparisons) != 1 || r.Comparisons[0].BaselineCaseID != nil {
		t.Errorf("a guide whose baselines are all unknown gets one comparison with baseline null")
	}
}

func TestParity(t *testing.T) {
	bench := map[string]any{"matrix": []any{map[string]any{"isl": 128.0, "osl": 64.0}}}
	pd := Facts{Model: s("m"), Runtime: s("vllm"), Accelerator: s("H100"), PrefillReplicas: i(2), PrefillTensorParallelSize: i(1),
		DecodeReplicas: i(1), DecodeTensorParallelSize: i(2), Benchmark: bench}
	plain := func(replicas, tp int) Facts { f := facts("m", replicas, tp); f.Benchmark = bench; return f }
	cases := []struct {
		name       string
		g, b       Facts
		valid      bool
		checks     ParityChecks
		gAcc, bAcc *int
	}{
		{"equal configurations", plain(4, 1), plain(4, 1), true, ParityChecks{true, true, true, true, true}, i(4), i(4)},
		{"P/D 2P×TP1 + 1D×TP2 against 4 replicas at TP1", pd, plain(4, 1), true, ParityChecks{true, true, true, true, true}, i(4), i(4)},
		{"P/D against 2 replicas at TP1", pd, plain(2, 1), false, ParityChecks{true, true, true, false, true}, i(4), i(2)},
		{"different model", plain(4, 1), func() Facts { f := plain(4, 1); f.Model = s("other"); return f }(), false, ParityChecks{false, true, true, true, true}, i(4), i(4)},
		{"empty model never matches", func() Facts { f := plain(4, 1); f.Model = s(""); return f }(), func() Facts { f := plain(4, 1); f.Model = s(""); return f }(), false, ParityChecks{false, true, true, true, true}, i(4), i(4)},
		{"unknown TP gives no count", func() Facts { f := plain(4, 1); f.TensorParallelSize = nil; return f }(), func() Facts { f := plain(4, 1); f.TensorParallelSize = nil; return f }(), false, ParityChecks{true, true, true, false, true}, nil, nil},
		{"P/D with an unknown decode TP gives no count", func() Facts { f := pd; f.DecodeTensorParallelSize = nil; return f }(), plain(4, 1), false, ParityChecks{true, true, true, false, true}, nil, i(4)},
		{"a baseline's benchmark with its baseline_type and parameters is the same workload", plain(4, 1), func() Facts {
			f := plain(4, 1)
			f.Benchmark = map[string]any{"matrix": bench["matrix"], "baseline_type": "direct-vllm", "baseline_parameters": map[string]any{"replicas": 4.0}}
			return f
		}(), true, ParityChecks{true, true, true, true, true}, i(4), i(4)},
		{"two simulators name no accelerator", func() Facts { f := plain(2, 1); f.Accelerator = nil; return f }(),
			func() Facts { f := plain(2, 1); f.Accelerator = nil; return f }(), true, ParityChecks{true, true, true, true, true}, i(2), i(2)},
		{"an accelerator on one side only", func() Facts { f := plain(2, 1); f.Accelerator = nil; return f }(), plain(2, 1), false,
			ParityChecks{true, true, false, true, true}, i(2), i(2)},
		{"another workload", plain(4, 1), func() Facts {
			f := plain(4, 1)
			f.Benchmark = map[string]any{"matrix": []any{map[string]any{"isl": 256.0, "osl": 64.0}}}
			return f
		}(), false, ParityChecks{true, true, true, true, false}, i(4), i(4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Build([]Case{{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, Facts: c.g}, {ID: "b", Role: RoleBaseline, Facts: c.b}}, Options{CompareConfigurations: true}, time.Now())
			p := r.Comparisons[0].Parity
			if p.Valid != c.valid || p.Checks == nil || *p.Checks != c.checks || !reflect.DeepEqual(p.GuideAccelerators, c.gAcc) || !reflect.DeepEqual(p.BaselineAccelerators, c.bAcc) {
				t.Errorf("parity valid=%v checks=%+v accelerators %v/%v; want %v %+v %v/%v", p.Valid, p.Checks, deref2(p.GuideAccelerators), deref2(p.BaselineAccelerators),
					c.valid, c.checks, deref2(c.gAcc), deref2(c.bAcc))
			}
		})
	}
}

func deref2(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestDeltaPercent(t *testing.T) {
	g := map[string]any{"throughput_tps": 150.0, "ttft_ms": 80.0, "tpot_ms": 5.0, "error_rate": 1.0, "itl_ms": "x",
		"prefix_cache_hit_rate": 0.6, "token_load_cv": true, "request_latency_ms": 1.0, "maximum_stable_qps": 3.0,
		"mechanism_metrics": map[string]any{"z_hits": 30.0, "a_blocks": 3.0, "only_guide": 1.0, "label": "x", "zero": 5.0}}
	b := map[string]any{"throughput_tps": 100.0, "ttft_ms": 120.0, "tpot_ms": 0.0, "error_rate": nil, "itl_ms": 1.0,
		"prefix_cache_hit_rate": 0.2, "token_load_cv": 1.0, "request_latency_ms": 3.0,
		"mechanism_metrics": map[string]any{"z_hits": 20.0, "a_blocks": 4.0, "label": "y", "zero": 0.0}}
	r := Build([]Case{{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, Metrics: g}, {ID: "b", Role: RoleBaseline, Metrics: b}}, Options{CompareConfigurations: true}, time.Now())
	c := r.Comparisons[0]
	data, _ := json.Marshal(c.DeltaPercent)
	// tpot (b = 0), error_rate (null), itl (not a number), token_load_cv (bool), maximum_stable_qps
	// (baseline absent) are left out; -33.333... rounds to 2 places; the listed order is kept.
	if want := `{"throughput_tps":50,"ttft_ms":-33.33,"request_latency_ms":-66.67,"prefix_cache_hit_rate":200}`; string(data) != want {
		t.Errorf("delta_percent %s, want %s", data, want)
	}
	data, _ = json.Marshal(c.MechanismDeltaPercent)
	if want := `{"a_blocks":-25,"z_hits":50}`; string(data) != want {
		t.Errorf("mechanism_delta_percent %s, want %s", data, want)
	}
}

func TestSLAFromTheGuideMetrics(t *testing.T) {
	m := map[string]any{"throughput_tps": 100.0, "success_rate": 100.0, "latency_distributions": map[string]any{"ttft": map[string]any{"p99_ms": 250.0, "p90_ms": 150.0}}}
	cases := []struct {
		name    string
		targets map[string]any
		met     *bool
		checks  []string
	}{
		{"no targets", nil, nil, nil},
		{"ttft p99 missed", map[string]any{"ttft_ms": 200.0}, ptr(false), []string{"ttft"}},
		{"ttft p90 met with throughput", map[string]any{"ttft_ms": 200.0, "ttft_percentile": "p90", "throughput_min_tps": 50.0}, ptr(true), []string{"throughput", "ttft"}},
		{"tpot unavailable", map[string]any{"tpot_ms": 10.0}, nil, []string{"tpot"}},
		{"an integer target", map[string]any{"success_rate_min_percent": 99}, ptr(true), []string{"success_rate"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Build([]Case{{ID: "g", Role: RoleGuide, Metrics: m, SLATargets: c.targets}}, Options{CompareConfigurations: true}, time.Now())
			sla := r.Comparisons[0].SLA
			if sla == nil || !reflect.DeepEqual(sla.Met, c.met) {
				t.Fatalf("sla %+v, want met %v", sla, c.met)
			}
			var names []string
			for k := range sla.Checks {
				names = append(names, k)
			}
			if len(names) != len(c.checks) {
				t.Errorf("checks %v, want %v", names, c.checks)
			}
			for _, n := range c.checks {
				if _, ok := sla.Checks[n]; !ok {
					t.Errorf("no %s check", n)
				}
			}
		})
	}
}

func TestTopologyComparisons(t *testing.T) {
	cases := []Case{
		{ID: "a", Role: RoleGuide, ScenarioID: "s1", Facts: facts("m", 4, 1), Metrics: map[string]any{"throughput_tps": 300.0, "ttft_ms": 50.0, "error_rate": 0.0, "tpot_ms": 1.0}},
		{ID: "base", Role: RoleBaseline, ScenarioID: "s1"},
		{ID: "b", Role: RoleGuide, ScenarioID: "s2"},
		{ID: "c", Role: RoleGuide, ScenarioID: "s1", Facts: facts("m", 2, 2), Metrics: map[string]any{"throughput_tps": 200.0, "ttft_ms": 75.0, "error_rate": 1.0, "tpot_ms": 0.0,
			"rate_stage_results": []any{rateStage(1.0, stageMetrics(10, nil, 10, 1))}}},
		{ID: "d", Role: RoleGuide, ScenarioID: "s1", Metrics: map[string]any{"rate_stage_results": []any{rateStage(1.0, stageMetrics(5, nil, 10, 2))}}},
	}
	r := Build(cases, Options{CompareConfigurations: true}, time.Now())
	var pairs []string
	for _, tc := range r.TopologyComparisons {
		pairs = append(pairs, tc.LeftCaseID+"-"+tc.RightCaseID)
	}
	if want := []string{"a-c", "a-d", "c-d"}; !reflect.DeepEqual(pairs, want) {
		t.Fatalf("pairs %v, want %v (guides of one scenario, i<j; baselines never)", pairs, want)
	}
	ac := r.TopologyComparisons[0]
	data, _ := json.Marshal(ac.Ratio)
	if want := `{"throughput_tps":1.5,"ttft_ms":0.6667,"error_rate":0}`; string(data) != want {
		t.Errorf("ratio %s, want %s (tpot: right is 0)", data, want)
	}
	if ac.RateStageStatistics != nil || ac.MatrixStatistics != nil {
		t.Errorf("a has no stage results, so no statistics")
	}
	cd := r.TopologyComparisons[2]
	if cd.RateStageStatistics == nil || value(t, cd.RateStageStatistics.Rows[0].Ratio, "throughput_tps") != 2.0 {
		t.Errorf("c-d rate statistics with c in the guide role: %+v", cd.RateStageStatistics)
	}
	if _, ok := cd.LeftMetrics["rate_stage_results"]; ok {
		t.Errorf("left_metrics holds the stage results")
	}
	data, _ = json.Marshal(ac)
	var keys Ordered[json.RawMessage]
	_ = json.Unmarshal(data, &keys)
	if want := []string{"left_case_id", "right_case_id", "left", "right", "left_metrics", "right_metrics", "ratio", "matrix_statistics", "rate_stage_statistics"}; !reflect.DeepEqual(keys.Keys(), want) {
		t.Errorf("topology keys %v", keys.Keys())
	}
	if r := Build(cases, Options{CompareConfigurations: false}, time.Now()); r.TopologyComparisons == nil || len(r.TopologyComparisons) != 0 {
		t.Errorf("compare_configurations false: %v, want []", r.TopologyComparisons)
	}
}

func TestStatisticsPresence(t *testing.T) {
	rs := []any{rateStage(1.0, stageMetrics(10, nil, 10, 1))}
	other := []any{rateStage(2.0, stageMetrics(10, nil, 10, 1))}
	for _, c := range []struct {
		name string
		g, b any
		null bool
	}{
		{"both have rate stages", rs, rs, false},
		{"one side has none", rs, nil, true},
		{"one side has an empty list", rs, []any{}, true},
		{"nothing matched is null, not {}", rs, other, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Build([]Case{{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, Metrics: map[string]any{"rate_stage_results": c.g}},
				{ID: "b", Role: RoleBaseline, Metrics: map[string]any{"rate_stage_results": c.b}}}, Options{CompareConfigurations: true}, time.Now())
			if got := r.Comparisons[0].RateStageStatistics == nil; got != c.null {
				t.Errorf("rate_stage_statistics null = %v, want %v", got, c.null)
			}
			if r.Comparisons[0].MatrixStatistics != nil {
				t.Errorf("matrix statistics without matrix results")
			}
			data, _ := json.Marshal(r)
			if c.null && !strings.Contains(string(data), `"rate_stage_statistics":null`) {
				t.Errorf("JSON %s", data)
			}
		})
	}
}

// TestBuildReadsTypedRunMetrics feeds the metrics block benchmark-runner builds in memory
// (typed maps, int64 counts, []map[string]any stage results) rather than a decoded one.
func TestBuildReadsTypedRunMetrics(t *testing.T) {
	run := func(ttft float64) evalrun.Metrics {
		b := evalrun.NewBuilder(nil)
		for k := range 10 {
			start := float64(k)
			b.Add(loadgen.Record{Successful: true, ScheduledAtSeconds: start, StartedAtSeconds: start, CompletedAtSeconds: start + 1,
				LatencyMs: 1000, TTFTMs: f(ttft), TPOTMs: f(10), InputTokens: 100, OutputTokens: 50}, nil)
		}
		m := b.Metrics("records.jsonl")
		m["rate_stage_results"] = []map[string]any{{"rate": 1.0, "duration": 10.0, "metrics": b.Metrics("records.jsonl")}}
		return m
	}
	r := Build([]Case{{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, Metrics: run(100), SLATargets: map[string]any{"ttft_ms": 150.0}},
		{ID: "b", Role: RoleBaseline, Metrics: run(200)}}, Options{CompareConfigurations: true}, time.Now())
	c := r.Comparisons[0]
	if c.SLA.Met == nil || !*c.SLA.Met {
		t.Errorf("sla %+v, want met (p99 TTFT 100 <= 150)", c.SLA)
	}
	if c.RateStageStatistics == nil || value(t, c.RateStageStatistics.Rows[0].Ratio, "ttft_ms") != 0.5 {
		t.Fatalf("rate statistics %+v", c.RateStageStatistics)
	}
	if got := value(t, c.RateStageStatistics.GeometricMeanRatio, "throughput_tps"); got != 1.0 {
		t.Errorf("throughput geometric mean %v", got)
	}
	if d, _ := c.DeltaPercent.Get("ttft_ms"); d != -50 {
		t.Errorf("ttft delta %v, want -50", d)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

func TestReportRoundTrip(t *testing.T) {
	g1 := stageMetrics(200, map[string]float64{"ttft.mean": 50, "ttft.p99": 100}, 2000, 10)
	b1 := stageMetrics(100, map[string]float64{"ttft.mean": 100, "ttft.p99": 200}, 1000, 10)
	matrix := func(m map[string]any) []any {
		return []any{map[string]any{"isl": 128.0, "osl": 64.0, "status": "succeeded", "stage_metrics": []any{map[string]any{"concurrency": 1.0, "num_requests": 32.0, "metrics": m}}}}
	}
	r := Build([]Case{
		{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, ScenarioID: "s", Facts: facts("m", 1, 1), Metrics: map[string]any{"matrix_results": matrix(g1), "rate_stage_results": []any{rateStage(1.0, g1)}}},
		{ID: "b", Role: RoleBaseline, ScenarioID: "s", Facts: facts("m", 1, 1), Metrics: map[string]any{"matrix_results": matrix(b1), "rate_stage_results": []any{rateStage(1.0, b1)}}},
		{ID: "g2", Role: RoleGuide, ScenarioID: "s"},
	}, Options{CompareConfigurations: true}, time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	if r.GeneratedAt != "2026-01-02T03:04:05.000006+00:00" {
		t.Errorf("generated_at %s", r.GeneratedAt)
	}
	first, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(first, &back); err != nil {
		t.Fatal(err)
	}
	second, _ := json.Marshal(back)
	if string(first) != string(second) {
		t.Errorf("the report does not survive a round trip:\n%s\n%s", first, second)
	}
	if back.Comparisons[1].Parity.Checks != nil || back.Comparisons[1].BaselineConfiguration.Facts != nil {
		t.Errorf("no-baseline parity/configuration read back as present")
	}
	if NeedsRefresh(first) {
		t.Errorf("a freshly built report needs a refresh")
	}
}

func TestNeedsRefresh(t *testing.T) {
	goodRow := `{"rate":1,"duration":60,"guide":{},"baseline":{},"ratio":{}}`
	withRows := func(facts, row string) string {
		return `{"comparison_version":2,"comparisons":[{"parity":{},"mechanism_delta_percent":{},"significance":null,` + facts + `"rate_stage_statistics":{"rows":[` + row + `]}}]}`
	}
	both := `"guide_configuration":{"model":"m"},"baseline_configuration":{"model":"m"},`
	cases := []struct {
		name   string
		stored string
		want   bool
	}{
		{"nothing stored", ``, true},
		{"null", `null`, true},
		{"an empty object", `{}`, true},
		{"not an object", `[1]`, true},
		{"not JSON", `{"comparison_version":`, true},
		{"version 1", `{"comparison_version":1,"comparisons":[]}`, true},
		{"version as a string", `{"comparison_version":"2","comparisons":[]}`, true},
		{"version 2 without comparisons", `{"comparison_version":2}`, false},
		{"version 2, no comparisons", `{"comparison_version":2,"comparisons":[]}`, false},
		{"a comparison without parity", `{"comparison_version":2,"comparisons":[{"mechanism_delta_percent":{}}]}`, true},
		{"a comparison without mechanism_delta_percent", `{"comparison_version":2,"comparisons":[{"parity":{}}]}`, true},
		{"a baseline's parity without reasons", `{"comparison_version":2,"comparisons":[{"parity":{"valid":false,"checks":{"model":true}},"mechanism_delta_percent":{}}]}`, true},
		{"a baseline's parity with reasons", `{"comparison_version":2,"comparisons":[{"parity":{"valid":true,"checks":{"model":true},"reasons":[]},"mechanism_delta_percent":{},"significance":null}]}`, false},
		{"a comparison from before the intervals", `{"comparison_version":2,"comparisons":[{"parity":{"valid":true,"checks":{"model":true},"reasons":[]},"mechanism_delta_percent":{}}]}`, true},
		{"intervals from before Welch's t", `{"comparison_version":2,"comparisons":[{"parity":{},"mechanism_delta_percent":{},"significance":{"metrics":{"ttft_ms":{"verdict":"better"}}}}]}`, true},
		{"intervals that name their method", `{"comparison_version":2,"comparisons":[{"parity":{},"mechanism_delta_percent":{},"significance":{"metrics":{"ttft_ms":{"method":"welch-t","verdict":"better"}}}}]}`, false},
		{"comparisons not a list", `{"comparison_version":2,"comparisons":{"a":1}}`, true},
		{"rate rows with both configurations", withRows(both, goodRow), false},
		{"rate rows without guide_configuration", withRows(`"baseline_configuration":{"model":"m"},`, goodRow), true},
		{"rate rows with an empty baseline_configuration", withRows(`"guide_configuration":{"model":"m"},"baseline_configuration":{},`, goodRow), true},
		{"a rate row without guide", withRows(both, `{"rate":1,"baseline":{}}`), true},
		{"a rate row without baseline", withRows(both, goodRow+`,{"rate":2,"guide":{}}`), true},
		{"no rate rows: the configurations are not needed", `{"comparison_version":2,"comparisons":[{"parity":{},"mechanism_delta_percent":{},"significance":null,"baseline_configuration":{},"rate_stage_statistics":null}]}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NeedsRefresh(json.RawMessage(c.stored)); got != c.want {
				t.Errorf("NeedsRefresh(%s) = %v, want %v", c.stored, got, c.want)
			}
		})
	}
}

func TestNonFiniteMetricsStillEncode(t *testing.T) {
	r := Build([]Case{{ID: "g", Role: RoleGuide, Metrics: map[string]any{"throughput_tps": math.NaN(), "nested": map[string]any{"x": math.Inf(1)}}}}, Options{CompareConfigurations: true}, time.Now())
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("a NaN in the metrics breaks the report: %v", err)
	}
	if !strings.Contains(string(data), `"throughput_tps":null`) {
		t.Errorf("%s", data)
	}
	_ = events.SLAVerdict{}
}

func TestFactsFrom(t *testing.T) {
	type myInt int
	got := FactsFrom(map[string]any{"model": "m", "guide": "pd-disaggregation", "runtime": nil, "image": 7,
		"replicas": 4, "tensor_parallel_size": int64(1), "decode_replicas": 2.0, "decode_tensor_parallel_size": myInt(2),
		"prefill_replicas": 1.5, "prefill_tensor_parallel_size": "1", "benchmark": map[string]any{"workload": "sanity_random.yaml"}})
	want := Facts{Model: s("m"), Guide: s("pd-disaggregation"), Replicas: i(4), TensorParallelSize: i(1), DecodeReplicas: i(2),
		DecodeTensorParallelSize: i(2), Benchmark: map[string]any{"workload": "sanity_random.yaml"}}
	if !reflect.DeepEqual(got, want) {
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		t.Errorf("FactsFrom\n%s\nwant\n%s", a, b)
	}
}

// TestGroupedRatioKeepsFirstSeenOrder: inside a group value the metrics follow the order they
// first got a ratio across the rows (the first stage has only a TTFT ratio here), as do the
// group values themselves.
func TestGroupedRatioKeepsFirstSeenOrder(t *testing.T) {
	st := func(c float64, tps any, ttft float64) map[string]any {
		return map[string]any{"concurrency": c, "metrics": map[string]any{"throughput_tps": tps, "latency_distributions": lat(map[string]float64{"ttft.mean": ttft})}}
	}
	pt := func(stages ...any) []any {
		return []any{map[string]any{"isl": 128.0, "osl": 64.0, "status": "succeeded", "stage_metrics": stages}}
	}
	s := MatrixStatistics(pt(st(8, nil, 10), st(1, 20.0, 10)), pt(st(8, 10.0, 20), st(1, 10.0, 40)))
	data, _ := json.Marshal(s.GroupedRatio)
	want := `{"isl":{"128":{"ttft_ms":0.375,"throughput_tps":2}},"osl":{"64":{"ttft_ms":0.375,"throughput_tps":2}},` +
		`"concurrency":{"8":{"ttft_ms":0.5},"1":{"throughput_tps":2,"ttft_ms":0.25}}}`
	if string(data) != want {
		t.Errorf("grouped_ratio %s\nwant %s", data, want)
	}
}

// Each reason of a parity that is not valid names what differs and both values, whichever side
// has which.
func TestParityReasonsNameBothValues(t *testing.T) {
	bench := func(isl float64) map[string]any {
		return map[string]any{"matrix": []any{map[string]any{"isl": isl, "osl": 64.0}}, "warmup_requests": 2.0}
	}
	left := Facts{Model: s("m"), Runtime: s("vllm"), Accelerator: s("H100"), Replicas: i(2), TensorParallelSize: i(1), Benchmark: bench(128)}
	right := Facts{Model: s("m"), Runtime: s("inference-sim"), Replicas: i(4), TensorParallelSize: i(1),
		Benchmark: map[string]any{"matrix": bench(256)["matrix"], "warmup_requests": 2.0, "baseline_type": "direct-vllm"}}
	for _, c := range []struct {
		name string
		g, b Facts
		want []string
	}{
		{"guide on H100", left, right, []string{`runtime differs: guide "vllm", baseline "inference-sim"`,
			`accelerator type differs: guide "H100", baseline none`, `accelerator count differs: guide 2, baseline 4`,
			`workload matrix differs: guide [{"isl":128,"osl":64}], baseline [{"isl":256,"osl":64}]`}},
		{"baseline on H100", right, left, []string{`runtime differs: guide "inference-sim", baseline "vllm"`,
			`accelerator type differs: guide none, baseline "H100"`, `accelerator count differs: guide 4, baseline 2`,
			`workload matrix differs: guide [{"isl":256,"osl":64}], baseline [{"isl":128,"osl":64}]`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Build([]Case{{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, Facts: c.g}, {ID: "b", Role: RoleBaseline, Facts: c.b}}, Options{CompareConfigurations: true}, time.Now())
			p := r.Comparisons[0].Parity
			if p.Valid || !reflect.DeepEqual(p.Reasons, c.want) {
				t.Errorf("valid %v, reasons\n%q\nwant\n%q", p.Valid, p.Reasons, c.want)
			}
			raw, _ := json.Marshal(p)
			var back Parity
			if err := json.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back.Reasons, c.want) {
				t.Errorf("reasons read back %q (%v)", back.Reasons, err)
			}
		})
	}
}
