package comparisonreport_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/report"
	"github.com/lensfn/lensfn/runtime/report/comparisonreport"
)

func ptr[T any](v T) *T { return &v }

func stage(tps, ttftMean, ttftP90, tokens, seconds float64) map[string]any {
	return map[string]any{"throughput_tps": tps, "ttft_ms": ttftMean - 1, "total_output_tokens": tokens, "benchmark_time_seconds": seconds,
		"latency_distributions": map[string]any{"ttft": map[string]any{"mean_ms": ttftMean, "p90_ms": ttftP90, "p99_ms": ttftP90 * 2}}}
}

func matrix(stages ...map[string]any) []any {
	var list []any
	for i, m := range stages {
		list = append(list, map[string]any{"concurrency": float64(int(1) << (3 * i)), "num_requests": 32.0, "metrics": m})
	}
	return []any{map[string]any{"isl": 128.0, "osl": 64.0, "status": "succeeded", "stage_metrics": list}}
}

// evaluation is a guide with a matrix and rate stages against its baseline (parity broken by
// the accelerator count, SLA missed on TTFT), and a second guide of the same scenario with no
// baseline (a topology pair with the first).
func evaluation() comparison.Report {
	f := func(replicas int) comparison.Facts {
		return comparison.Facts{Model: ptr("Qwen/Qwen3-8B"), Runtime: ptr("vllm"), Accelerator: ptr("sim"), Replicas: ptr(replicas),
			TensorParallelSize: ptr(1), Benchmark: map[string]any{"matrix": []any{}}}
	}
	cases := []comparison.Case{
		{ID: "guide-1", Role: comparison.RoleGuide, ProviderRef: "optimized-baseline", ScenarioID: "sc", ScenarioName: "shared <prefix> & co",
			WorkloadID: "plan--sc", BaselineCaseIDs: []string{"baseline-1"}, Facts: f(4),
			SLATargets: map[string]any{"ttft_ms": 50.0, "ttft_percentile": "p90", "throughput_min_tps": 100.0},
			Metrics: map[string]any{"throughput_tps": 300.0, "ttft_ms": 40.0, "error_rate": 0.0, "prefix_cache_hit_rate": 0.75,
				"latency_distributions": map[string]any{"ttft": map[string]any{"p90_ms": 80.0}},
				"mechanism_metrics":     map[string]any{"routed_prefix_hits": 30.0},
				"matrix_results":        matrix(stage(200, 50, 80, 2000, 10), stage(800, 30, 40, 8000, 10)),
				"rate_stage_results":    []any{map[string]any{"rate": 2.0, "duration": 60.0, "metrics": stage(120, 60, 90, 7200, 60)}}}},
		{ID: "baseline-1", Role: comparison.RoleBaseline, ScenarioID: "sc", BaselineType: "direct-vllm", Facts: f(2),
			Metrics: map[string]any{"throughput_tps": 200.0, "ttft_ms": 80.0, "error_rate": 2.0, "prefix_cache_hit_rate": 0.25,
				"mechanism_metrics":  map[string]any{"routed_prefix_hits": 10.0},
				"matrix_results":     matrix(stage(100, 100, 100, 1000, 10), stage(200, 120, 80, 3000, 20)),
				"rate_stage_results": []any{map[string]any{"rate": 2.0, "duration": 60.0, "metrics": stage(100, 120, 150, 6000, 60)}}}},
		{ID: "guide-2", Role: comparison.RoleGuide, ProviderRef: "pd-disaggregation", ScenarioID: "sc", WorkloadID: "plan--sc",
			Facts:   comparison.Facts{PrefillReplicas: ptr(2), PrefillTensorParallelSize: ptr(1), DecodeReplicas: ptr(1), DecodeTensorParallelSize: ptr(2)},
			Metrics: map[string]any{"throughput_tps": 150.0, "ttft_ms": 20.0}},
	}
	return comparison.Build(cases, comparison.Options{CompareConfigurations: true}, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
}

func render(t *testing.T, r comparison.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := comparisonreport.Render(&b, r, comparisonreport.Info{WorkflowID: "wf-1", Name: "Qwen <comparison>", Status: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wellFormed parses the page strictly as XML (after closing HTML's void meta elements): every
// element is closed and nested, every attribute quoted, every text escaped. It returns the
// element names in document order.
func wellFormed(t *testing.T, page string) []string {
	t.Helper()
	if !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Fatalf("no doctype: %.60s", page)
	}
	doc := regexp.MustCompile(`(<meta[^>]*[^/])>`).ReplaceAllString(page, "$1/>")
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	var names []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page is not well formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			names = append(names, se.Name.Local)
		}
	}
	if len(names) < 3 || names[0] != "html" || names[1] != "head" {
		t.Fatalf("document structure %v", names[:min(len(names), 5)])
	}
	return names
}

func count(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

func TestReportIsValidSelfContainedHTMLWithTheNumbers(t *testing.T) {
	r := evaluation()
	page := render(t, r)
	names := wellFormed(t, page)
	c := r.Comparisons[0]
	st := c.MatrixStatistics
	gm := func(v comparison.Values, k string) string { x, _ := v.Get(k); return report.Num(*x) }
	delta := func(k string) string { x, _ := c.DeltaPercent.Get(k); return report.Num(x) }
	rowRatio := func(s *comparison.Statistics, i int, k string) string {
		x, _ := s.Rows[i].Ratio.Get(k)
		return report.Num(*x)
	}
	for _, want := range []string{
		"Evaluation report: Qwen &lt;comparison&gt;", "Workflow wf-1", // escaped names
		"shared &lt;prefix&gt; &amp; co",
		"Comparison 1: guide-1 (optimized-baseline) vs baseline-1 (direct-vllm)",
		"Comparison 2: guide-2 (pd-disaggregation) without a baseline",
		"SLA verdict: missed", "ttft p90 80 against target 50 ms", // the guide's p90 TTFT 80 > 50
		"accelerator count differs: guide 4, baseline 2",
		gm(st.GeometricMeanRatio, "throughput_tps"), gm(st.GeometricMeanRatio, "ttft_ms"), gm(st.GeometricMeanRatioP90, "ttft_ms"),
		report.Num(*st.SuiteNormalizedThroughputRatio), report.Num(*c.RateStageStatistics.SuiteNormalizedThroughputRatio),
		rowRatio(st, 1, "throughput_tps"), rowRatio(c.RateStageStatistics, 0, "ttft_ms"),
		delta("throughput_tps"), delta("ttft_ms"), delta("prefix_cache_hit_rate"),
		"routed_prefix_hits", "Topology comparisons", "2P×TP1 / 1D×TP2", "4×TP1",
		"Geometric mean ratio (guide / baseline)", "Change versus the baseline", "Mean throughput ratio by concurrency", "1 = parity",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Known figures: throughput ratios 2 and 4 give the geometric mean √8 = 2.828; the suite
	// throughput is (10000/20)/(4000/30) = 3.75; throughput Δ (300-200)/200 = 50 %.
	for _, want := range []string{"2.828", "3.750", ">50<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks the hand-computed %s", want)
		}
	}
	// Charts: the delta chart, geometric means, two ratio-by-stage charts and a grouped chart
	// for the matrix, geometric means and two ratio-by-stage charts for the rate stages, and the
	// topology throughput chart.
	if n := count(names, "svg"); n < 8 {
		t.Errorf("%d charts, want at least 8", n)
	}
	if strings.Contains(page, "TPOT guide") {
		t.Error("a TPOT column without any TPOT value")
	}
	if regexp.MustCompile(`(?i)(https?:|//[a-z]|<script|url\(|<link|<img|@import|<iframe)`).MatchString(page) {
		t.Errorf("the page references something outside itself: %s", regexp.MustCompile(`(?i)(https?:[^"\s]*|<script|url\(|<link|<img|@import|<iframe)`).FindString(page))
	}
	if strings.Contains(page, "NaN") || strings.Contains(page, "Inf") {
		t.Error("a non-finite number reached the page")
	}
}

func TestStoredReportRendersTheSame(t *testing.T) {
	r := evaluation()
	stored, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	info := comparisonreport.Info{WorkflowID: "wf-1", Name: "Qwen <comparison>", Status: "succeeded"}
	if err := comparisonreport.RenderStored(&b, stored, info); err != nil {
		t.Fatal(err)
	}
	if b.String() != render(t, r) {
		t.Error("the stored report renders differently from the built one")
	}
	if err := comparisonreport.RenderStored(io.Discard, json.RawMessage(`{"comparisons": 7}`), info); err == nil {
		t.Error("a malformed stored report rendered")
	}
}

func TestEmptyAndUnmatchedReports(t *testing.T) {
	page := render(t, comparison.Build(nil, comparison.Options{CompareConfigurations: true}, time.Now()))
	wellFormed(t, page)
	if !strings.Contains(page, "no guide cases") {
		t.Error("an empty evaluation does not say so")
	}
	// Both sides have rate stages, but at different rates: nothing matched, and the page says why.
	r := comparison.Build([]comparison.Case{
		{ID: "g", Role: comparison.RoleGuide, BaselineCaseIDs: []string{"b"}, Metrics: map[string]any{"rate_stage_results": []any{map[string]any{"rate": 1.0, "metrics": stage(1, 1, 1, 1, 1)}}}},
		{ID: "b", Role: comparison.RoleBaseline, Metrics: map[string]any{"rate_stage_results": []any{map[string]any{"rate": 2.0, "metrics": stage(1, 1, 1, 1, 1)}}}},
	}, comparison.Options{CompareConfigurations: true}, time.Now())
	page = render(t, r)
	wellFormed(t, page)
	for _, want := range []string{"No per-stage ratios", "SLA verdict: not evaluated", "No SLA targets"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestLongStatisticsAreBounded(t *testing.T) {
	var g, b []any
	for i := range 500 {
		g = append(g, map[string]any{"rate": float64(i + 1), "metrics": stage(2, 1, 1, 1, 1)})
		b = append(b, map[string]any{"rate": float64(i + 1), "metrics": stage(1, 1, 1, 1, 1)})
	}
	r := comparison.Build([]comparison.Case{
		{ID: "g", Role: comparison.RoleGuide, BaselineCaseIDs: []string{"b"}, Metrics: map[string]any{"rate_stage_results": g}},
		{ID: "b", Role: comparison.RoleBaseline, Metrics: map[string]any{"rate_stage_results": b}},
	}, comparison.Options{CompareConfigurations: true}, time.Now())
	page := render(t, r)
	names := wellFormed(t, page)
	if !strings.Contains(page, "Showing the first 200 of 500 rows") {
		t.Error("no note about the cut rows")
	}
	if n := count(names, "tr"); n > 260 {
		t.Errorf("%d table rows for 500 stages, want them bounded", n)
	}
}

// With repetitions the report shows each change with its interval and verdict, draws the
// intervals as error bars, keeps a change inside its noise pale and cut, and gives the SLA
// margins and how many repetitions met each target.
func TestReportShowsIntervalsVerdictsAndMargins(t *testing.T) {
	boot := func(ttft, itlLo float64) *evalrun.Bootstrap {
		b := &evalrun.Bootstrap{}
		for r := range 3 {
			var ttfts, itls []float64
			for k := range 100 {
				ttfts = append(ttfts, ttft+float64(k%5)/10)
				itls = append(itls, itlLo+float64(8*r)+float64((k*7+r)%90)) // repetitions 8 ms apart: the 5 ms change is noise
			}
			b.Repetitions = append(b.Repetitions, evalrun.BootstrapRepetition{Repetition: r,
				Replicates: map[string][]float64{"ttft_ms": ttfts, "itl_ms": itls}})
		}
		return b
	}
	rep := func(ttft float64) evalrun.Metrics {
		return evalrun.Metrics{"latency_distributions": map[string]any{"ttft": map[string]any{"p99_ms": ttft}}}
	}
	r := comparison.Build([]comparison.Case{
		{ID: "guide-1", Role: comparison.RoleGuide, BaselineCaseIDs: []string{"baseline-1"}, Bootstrap: boot(20, 10),
			SLATargets: map[string]any{"ttft_ms": 50.0}, Repetitions: []evalrun.Metrics{rep(40), rep(60), rep(45)},
			Metrics: map[string]any{"ttft_ms": 20.0, "latency_distributions": map[string]any{"ttft": map[string]any{"p99_ms": 45.0}}}},
		{ID: "baseline-1", Role: comparison.RoleBaseline, Bootstrap: boot(40, 5), Metrics: map[string]any{"ttft_ms": 40.0}},
	}, comparison.Options{CompareConfigurations: true}, time.Now())
	page := render(t, r)
	wellFormed(t, page)
	for _, want := range []string{"Δ % 95 % interval", ">better<", ">no significant difference<", `class="interval"`,
		`fill-opacity="0.35"`, "Pale bars are changes inside their noise", "repetitions met", ">2 of 3<", ">10<", // margin 50 - 45 = 5 ms, 10 %
		"2 of 3 repetitions met every target", "s t over the repetitions"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// An evaluation's own level names its intervals.
	strict := comparison.Build([]comparison.Case{
		{ID: "guide-1", Role: comparison.RoleGuide, BaselineCaseIDs: []string{"baseline-1"}, Bootstrap: boot(20, 10)},
		{ID: "baseline-1", Role: comparison.RoleBaseline, Bootstrap: boot(40, 5)},
	}, comparison.Options{Confidence: 0.999}, time.Now())
	if page := render(t, strict); !strings.Contains(page, "Δ % 99.9 % interval") || !strings.Contains(page, "error bars are 99.9 % intervals") {
		t.Error("a 0.999 evaluation's page does not name its level")
	}
}
