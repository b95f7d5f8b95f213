package comparisonreport

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/report"
)

// KindHTML is the artifact kind of the page.
const KindHTML = "report-html"

// Info names the evaluation the report belongs to.
type Info struct {
	WorkflowID, Name, Status string
}

// maxRowsShown bounds the rows drawn per statistics table and chart; the JSON report keeps all.
const maxRowsShown = 200

// metricLabels name the compared metrics for people.
var metricLabels = map[string]string{
	"throughput_tps": "throughput", "input_throughput_tps": "input throughput", "throughput_rps": "requests/s",
	"ttft_ms": "TTFT", "itl_ms": "ITL", "tpot_ms": "TPOT", "request_latency_ms": "latency", "error_rate": "error rate",
	"maximum_stable_qps": "max stable QPS", "slo_goodput_rps": "SLO goodput", "prefix_cache_hit_rate": "prefix cache hit rate",
	"token_load_cv": "token load CV",
}

// statMetrics are the statistics' metrics, in the report's order.
var statMetrics = []string{"throughput_tps", "ttft_ms", "tpot_ms", "request_latency_ms"}

// headlineMetrics are the rows of a comparison's headline table (delta_percent's metrics).
var headlineMetrics = []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "itl_ms", "tpot_ms",
	"request_latency_ms", "error_rate", "maximum_stable_qps", "slo_goodput_rps", "prefix_cache_hit_rate", "token_load_cv"}

// Colours: guide and baseline sides, and the three statistics (Okabe-Ito, as runtime/report).
const (
	colorGuide, colorBaseline = "#0072B2", "#E69F00"
	colorGood, colorBad       = "#009E73", "#D55E00"
)

var statColors = map[string]string{"mean": "#0072B2", "p90": "#56B4E9", "p99": "#CC79A7"}

// Render writes the report as one self-contained HTML page.
func Render(w io.Writer, r comparison.Report, info Info) error {
	return report.Render(w, Page(r, info))
}

// RenderStored renders a stored report (the workflow's report JSON).
func RenderStored(w io.Writer, stored json.RawMessage, info Info) error {
	var r comparison.Report
	if err := json.Unmarshal(stored, &r); err != nil {
		return fmt.Errorf("comparisonreport: the stored report does not parse: %w", err)
	}
	return Render(w, r, info)
}

// Page lays out the report.
func Page(r comparison.Report, info Info) report.Page {
	title := "Evaluation report"
	if info.Name != "" {
		title += ": " + info.Name
	}
	var sub []string
	if info.WorkflowID != "" {
		sub = append(sub, "Workflow "+info.WorkflowID)
	}
	if info.Status != "" {
		sub = append(sub, info.Status)
	}
	sub = append(sub, fmt.Sprintf("comparison version %d", r.ComparisonVersion))
	if r.GeneratedAt != "" {
		sub = append(sub, "report generated "+r.GeneratedAt)
	}
	p := report.Page{Title: title, Subtitle: strings.Join(sub, " · ")}
	if t, err := time.Parse(time.RFC3339Nano, r.GeneratedAt); err == nil {
		p.Generated = t
	}
	met, missed, parity := 0, 0, 0
	for _, c := range r.Comparisons {
		if c.SLA != nil && c.SLA.Met != nil {
			if *c.SLA.Met {
				met++
			} else {
				missed++
			}
		}
		if c.Parity.Valid {
			parity++
		}
	}
	p.Facts = []report.Fact{
		{Label: "comparisons", Value: fmt.Sprint(len(r.Comparisons))},
		{Label: "SLA met", Value: fmt.Sprint(met)},
		{Label: "SLA missed", Value: fmt.Sprint(missed)},
		{Label: "with full parity", Value: fmt.Sprintf("%d of %d", parity, len(r.Comparisons))},
		{Label: "topology comparisons", Value: fmt.Sprint(len(r.TopologyComparisons))},
	}
	p.Sections = append(p.Sections, summarySection(r))
	for i, c := range r.Comparisons {
		p.Sections = append(p.Sections, comparisonSections(i+1, c)...)
	}
	if len(r.TopologyComparisons) > 0 {
		p.Sections = append(p.Sections, topologySections(r.TopologyComparisons)...)
	}
	return p
}

func str(p *string) string {
	if p == nil || *p == "" {
		return "–"
	}
	return *p
}

func num(p *float64) string {
	if p == nil {
		return "–"
	}
	return report.Num(*p)
}

func verdict(m *bool) string {
	switch {
	case m == nil:
		return "not evaluated"
	case *m:
		return "met"
	default:
		return "missed"
	}
}

func comparisonName(c comparison.Comparison) string {
	guide := c.GuideCaseID + " (" + str(c.Guide) + ")"
	if c.BaselineCaseID == nil {
		return guide + " without a baseline"
	}
	return guide + " vs " + *c.BaselineCaseID + " (" + str(c.BaselineType) + ")"
}

// summarySection lists every comparison with its verdict and headline ratios.
func summarySection(r comparison.Report) report.Section {
	s := report.Section{Heading: "Summary",
		Notes: []string{"Ratios are guide / baseline: a throughput ratio above 1 favours the guide, a latency ratio below 1 favours the guide."}}
	if len(r.Comparisons) == 0 {
		s.Notes = append(s.Notes, "The evaluation has no guide cases, so there is nothing to compare.")
		return s
	}
	tb := &report.Table{Header: []string{"#", "comparison", "scenario", "SLA", "parity", "throughput Δ %", "TTFT Δ %", "geo-mean throughput ratio", "geo-mean TTFT ratio"}}
	for i, c := range r.Comparisons {
		parity := "valid"
		switch {
		case c.BaselineCaseID == nil:
			parity = "no baseline"
		case !c.Parity.Valid:
			parity = "not valid"
		}
		st := c.MatrixStatistics
		if st == nil {
			st = c.RateStageStatistics
		}
		gmT, gmL := "–", "–"
		if st != nil {
			if v, ok := st.GeometricMeanRatio.Get("throughput_tps"); ok {
				gmT = num(v)
			}
			if v, ok := st.GeometricMeanRatio.Get("ttft_ms"); ok {
				gmL = num(v)
			}
		}
		delta := func(k string) string {
			if v, ok := c.DeltaPercent.Get(k); ok {
				return report.Num(v)
			}
			return "–"
		}
		tb.Rows = append(tb.Rows, []string{fmt.Sprint(i + 1), comparisonName(c), str(c.ScenarioName), verdict(slaMet(c)), parity,
			delta("throughput_tps"), delta("ttft_ms"), gmT, gmL})
	}
	s.Table = tb
	return s
}

func slaMet(c comparison.Comparison) *bool {
	if c.SLA == nil {
		return nil
	}
	return c.SLA.Met
}

// comparisonSections are one comparison's sections: overview (SLA, parity, headline metrics),
// then its matrix and rate-stage statistics.
func comparisonSections(n int, c comparison.Comparison) []report.Section {
	head := report.Section{Heading: fmt.Sprintf("Comparison %d: %s", n, comparisonName(c))}
	head.Notes = append(head.Notes, fmt.Sprintf("Workload %s · scenario %s (%s).", c.WorkloadID, str(c.ScenarioName), str(c.ScenarioID)))
	head.Notes = append(head.Notes, "SLA of the guide: "+verdict(slaMet(c))+"."+slaDetail(c))
	if c.SLA != nil && c.SLA.Met != nil && !*c.SLA.Met {
		head.Warnings = append(head.Warnings, "The guide missed its SLA: "+failedChecks(c)+".")
	}
	if c.BaselineCaseID == nil {
		head.Notes = append(head.Notes, "This guide has no baseline, so there are no ratios.")
	} else if !c.Parity.Valid {
		head.Warnings = append(head.Warnings, "Parity is not valid: "+parityFailures(c.Parity)+". The ratios compare unlike configurations.")
	} else {
		head.Notes = append(head.Notes, fmt.Sprintf("Parity: same model, runtime, accelerator type, accelerator count (%s) and workload.", intStr(c.Parity.GuideAccelerators)))
	}
	sig := c.Significance
	tb := &report.Table{Header: []string{"metric", "guide", "baseline", "Δ %"}}
	if sig != nil {
		tb.Header = append(tb.Header, "Δ % "+report.Level(sig.Confidence)+" interval", "verdict")
	}
	delta := report.BarChart{Title: "Change versus the baseline", XLabel: "metric", YLabel: "Δ % (guide − baseline) / baseline"}
	for _, k := range headlineMetrics {
		g, gok := c.GuideMetrics[k].(float64)
		b, bok := c.BaselineMetrics[k].(float64)
		d, dok := c.DeltaPercent.Get(k)
		var ms *comparison.MetricSignificance
		if sig != nil {
			if m, ok := sig.Metrics.Get(k); ok {
				ms = &m
			}
		}
		if !gok && !bok && !dok && ms == nil {
			continue
		}
		row := []string{metricLabels[k], "–", "–", "–"}
		if gok {
			row[1] = report.Num(g)
		}
		if bok {
			row[2] = report.Num(b)
		}
		low, high, muted := math.NaN(), math.NaN(), false
		if ms != nil && ms.ChangePercent != nil {
			// With repetitions the bar is the change of the repetitions' means, with its interval.
			d, dok = *ms.ChangePercent, true
			low, high = *ms.ChangeLow, *ms.ChangeHigh
			muted = ms.Verdict == comparison.VerdictNoSignificant
		}
		if dok {
			row[3] = report.Num(d)
			delta.Labels, delta.Values = append(delta.Labels, metricLabels[k]), append(delta.Values, d)
			delta.Colors = append(delta.Colors, deltaColor(k, d))
			delta.Low, delta.High, delta.Muted = append(delta.Low, low), append(delta.High, high), append(delta.Muted, muted)
		}
		if sig != nil {
			interval, verdict := "–", "–"
			if ms != nil {
				verdict = ms.Verdict
				if ms.ChangeLow != nil {
					interval = report.Num(*ms.ChangeLow) + " to " + report.Num(*ms.ChangeHigh)
				}
			}
			row = append(row, interval, verdict)
		}
		tb.Rows = append(tb.Rows, row)
	}
	head.Table = tb
	if len(delta.Values) > 0 {
		head.Charts = append(head.Charts, delta)
		head.Notes = append(head.Notes, "Green bars favour the guide (more throughput, hit rate or stable load; less latency or errors), orange ones the baseline.")
	}
	if sig != nil {
		how := "Welch's t over the repetitions"
		if sig.GuideRepetitions < 2 || sig.BaselineRepetitions < 2 {
			how = fmt.Sprintf("a bootstrap over the requests, %d iterations, seed %d", sig.Iterations, sig.Seed)
		}
		head.Notes = append(head.Notes, fmt.Sprintf("Confidence: %d repetitions of the guide and %d of the baseline; the error bars are %s intervals, "+
			"each metric on its own (%s). Pale bars are changes inside their noise (no significant difference): they are cut at the "+
			"range of the significant ones.", sig.GuideRepetitions, sig.BaselineRepetitions, report.Level(sig.Confidence), how))
	}
	sections := []report.Section{head, slaSection(c)}
	if len(c.Mechanisms) > 0 {
		why := report.Section{Heading: fmt.Sprintf("Comparison %d: what drives the difference", n),
			Table: &report.Table{Header: []string{"mechanism", "guide", "baseline", "what it means"}}}
		for _, m := range c.Mechanisms {
			why.Table.Rows = append(why.Table.Rows, []string{m.Mechanism, report.Num(m.Guide), report.Num(m.Baseline), m.Says})
		}
		sections = append(sections, why)
	}
	if len(c.MechanismDeltaPercent) > 0 {
		mech := report.Section{Heading: fmt.Sprintf("Comparison %d: mechanism metrics", n),
			Table: &report.Table{Header: []string{"mechanism metric", "Δ %"}}}
		for _, e := range c.MechanismDeltaPercent {
			mech.Table.Rows = append(mech.Table.Rows, []string{e.Key, report.Num(e.Value)})
		}
		sections = append(sections, mech)
	}
	if c.BaselineCaseID != nil {
		sections = append(sections, statisticsSections(fmt.Sprintf("Comparison %d", n), "guide", "baseline", c.MatrixStatistics, c.RateStageStatistics)...)
	}
	return sections
}

// deltaColor says which side a change favours: higher is better for throughput-like metrics.
func deltaColor(metric string, d float64) string {
	lowerIsBetter := strings.HasSuffix(metric, "_ms") || metric == "error_rate" || metric == "token_load_cv"
	if (d > 0) != lowerIsBetter || d == 0 {
		return colorGood
	}
	return colorBad
}

func intStr(p *int) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

// parityFailures says what differs, each with both values (older reports without reasons name
// the failed checks).
func parityFailures(p comparison.Parity) string {
	if p.Checks == nil {
		return "no checks"
	}
	if len(p.Reasons) > 0 {
		return strings.Join(p.Reasons, "; ")
	}
	var out []string
	for _, c := range []struct {
		ok   bool
		name string
	}{{p.Checks.Model, "model"}, {p.Checks.Runtime, "runtime"}, {p.Checks.AcceleratorType, "accelerator type"},
		{p.Checks.AcceleratorCount, fmt.Sprintf("accelerator count (guide %s, baseline %s)", intStr(p.GuideAccelerators), intStr(p.BaselineAccelerators))},
		{p.Checks.Workload, "workload"}} {
		if !c.ok {
			out = append(out, c.name+" differs")
		}
	}
	return strings.Join(out, ", ")
}

var checkOrder = []string{"ttft", "tpot", "throughput", "success_rate"}

// repetitionsMet is "k of n", or "–" without repetitions.
func repetitionsMet(met, of *int) string {
	if met == nil || of == nil {
		return "–"
	}
	return fmt.Sprintf("%d of %d", *met, *of)
}

func slaDetail(c comparison.Comparison) string {
	if c.SLA == nil || len(c.SLA.Checks) == 0 {
		return " No SLA targets were set."
	}
	return ""
}

func failedChecks(c comparison.Comparison) string {
	var out []string
	for _, name := range checkOrder {
		ch, ok := c.SLA.Checks[name]
		if ok && ch.Met != nil && !*ch.Met {
			out = append(out, fmt.Sprintf("%s %s %s against target %s %s", name, ch.Percentile, num(ch.Actual), report.Num(ch.Target), ch.Unit))
		}
	}
	return strings.Join(out, "; ")
}

// slaSection is the guide's SLA checks as a table.
func slaSection(c comparison.Comparison) report.Section {
	s := report.Section{Heading: "SLA verdict: " + verdict(slaMet(c))}
	if c.SLA == nil || len(c.SLA.Checks) == 0 {
		s.Notes = []string{"No SLA targets were configured for this case."}
		return s
	}
	s.Table = &report.Table{Header: []string{"check", "actual", "target", "unit", "percentile", "met", "margin", "margin %", "repetitions met"}}
	for _, name := range checkOrder {
		ch, ok := c.SLA.Checks[name]
		if !ok {
			continue
		}
		pct := ch.Percentile
		if pct == "" {
			pct = "–"
		}
		s.Table.Rows = append(s.Table.Rows, []string{name, num(ch.Actual), report.Num(ch.Target), ch.Unit, pct, verdict(ch.Met),
			num(ch.Margin), num(ch.MarginPercent), repetitionsMet(ch.RepetitionsMet, ch.Repetitions)})
	}
	s.Notes = append(s.Notes, "The margin is how far the actual value is inside its target (negative: past it).")
	if c.SLA.Repetitions != nil {
		s.Notes = append(s.Notes, fmt.Sprintf("%s repetitions met every target.", repetitionsMet(c.SLA.RepetitionsMet, c.SLA.Repetitions)))
	}
	return s
}

// statisticsSections show matrix and rate-stage statistics: geometric means by statistic, the
// rows' ratios, grouped ratios and the suite-normalized throughput.
func statisticsSections(prefix, left, right string, matrix, rate *comparison.Statistics) []report.Section {
	var out []report.Section
	for _, item := range []struct {
		name string
		st   *comparison.Statistics
	}{{"matrix", matrix}, {"rate stages", rate}} {
		if item.st == nil {
			continue
		}
		out = append(out, statisticsSection(prefix+", "+item.name, left, right, item.st)...)
	}
	if len(out) == 0 {
		out = append(out, report.Section{Heading: prefix + ": matched stages",
			Notes: []string{"No per-stage ratios: one side has no matrix points or rate stages, or none matched (matching needs the same unique isl/osl and concurrency, or the same unique rate)."}})
	}
	return out
}

func statisticsSection(heading, left, right string, st *comparison.Statistics) []report.Section {
	s := report.Section{Heading: heading}
	count := len(st.Rows)
	if st.Matrix() {
		s.Notes = append(s.Notes, fmt.Sprintf("Matched matrix stages: %d (joined on isl, osl and concurrency).", count))
	} else {
		s.Notes = append(s.Notes, fmt.Sprintf("Matched rate stages: %d (joined on rate).", count))
	}
	if st.SuiteNormalizedThroughputRatio != nil {
		s.Notes = append(s.Notes, fmt.Sprintf("Suite-normalized throughput ratio (total output tokens per second, %s / %s): %s.", left, right, num(st.SuiteNormalizedThroughputRatio)))
	} else {
		s.Notes = append(s.Notes, "Suite-normalized throughput ratio: not available (no matched pair with output tokens and a measured duration on both sides).")
	}
	gm := report.BarChart{Title: "Geometric mean ratio (" + left + " / " + right + ")", XLabel: "metric · statistic", YLabel: "ratio",
		Reference: 1, ReferenceLabel: "1 = parity"}
	for _, metric := range statMetrics {
		for _, stat := range []struct {
			name string
			v    comparison.Values
		}{{"mean", st.GeometricMeanRatio}, {"p90", st.GeometricMeanRatioP90}, {"p99", st.GeometricMeanRatioP99}} {
			if v, ok := stat.v.Get(metric); ok && v != nil {
				gm.Labels = append(gm.Labels, metricLabels[metric]+" "+stat.name)
				gm.Values = append(gm.Values, *v)
				gm.Colors = append(gm.Colors, statColors[stat.name])
			}
		}
	}
	s.Charts = append(s.Charts, gm)
	rows := st.Rows
	if len(rows) > maxRowsShown {
		s.Warnings = append(s.Warnings, fmt.Sprintf("Showing the first %d of %d rows; the JSON report has them all.", maxRowsShown, len(rows)))
		rows = rows[:maxRowsShown]
	}
	dims := []string{"rate", "duration"}
	if st.Matrix() {
		dims = []string{"isl", "osl", "concurrency", "num_requests"}
	}
	// Only the metrics some row has a value of get columns, so the table stays readable.
	var shown []string
	for _, m := range statMetrics {
		for _, r := range rows {
			g, _ := r.Guide.Get(m)
			b, _ := r.Baseline.Get(m)
			if _, ok := r.Ratio.Get(m); ok || g != nil || b != nil {
				shown = append(shown, m)
				break
			}
		}
	}
	tb := &report.Table{Header: append([]string{}, dims...)}
	for _, m := range shown {
		tb.Header = append(tb.Header, metricLabels[m]+" "+left, metricLabels[m]+" "+right, metricLabels[m]+" ratio")
	}
	ratioCharts := map[string]*report.BarChart{}
	for _, m := range []string{"throughput_tps", "ttft_ms"} {
		ratioCharts[m] = &report.BarChart{Title: metricLabels[m] + " ratio by stage (mean)", XLabel: strings.Join(dims[:len(dims)-1], "/"), YLabel: "ratio",
			Reference: 1, ReferenceLabel: "1 = parity"}
	}
	for _, r := range rows {
		var cells, label []string
		for i, d := range dims {
			v, _ := r.Dimensions.Get(d)
			cells = append(cells, dimStr(v))
			if i < len(dims)-1 {
				label = append(label, dimStr(v))
			}
		}
		for _, m := range shown {
			g, _ := r.Guide.Get(m)
			b, _ := r.Baseline.Get(m)
			ratio, ok := r.Ratio.Get(m)
			rs := "–"
			if ok {
				rs = num(ratio)
			}
			cells = append(cells, num(g), num(b), rs)
			if c := ratioCharts[m]; c != nil && ok && ratio != nil {
				c.Labels, c.Values = append(c.Labels, strings.Join(label, "/")), append(c.Values, *ratio)
				c.Colors = append(c.Colors, ratioColor(m, *ratio))
			}
		}
		tb.Rows = append(tb.Rows, cells)
	}
	if st.Matrix() {
		s.Notes = append(s.Notes, "In matrix rows the "+left+" and "+right+" columns are the stages' headline (p50) values; the ratios are of the means.")
	}
	s.Table = tb
	for _, m := range []string{"throughput_tps", "ttft_ms"} {
		if len(ratioCharts[m].Values) > 0 {
			s.Charts = append(s.Charts, *ratioCharts[m])
		}
	}
	out := []report.Section{s}
	if st.GroupedRatio != nil {
		g := report.Section{Heading: heading + ": grouped ratios",
			Notes: []string{"Arithmetic mean of the mean ratios of the stages sharing each value."},
			Table: &report.Table{Header: []string{"dimension", "value"}}}
		for _, m := range statMetrics {
			g.Table.Header = append(g.Table.Header, metricLabels[m]+" ratio")
		}
		for _, dim := range []struct {
			name   string
			groups comparison.Ordered[comparison.Values]
		}{{"isl", st.GroupedRatio.ISL}, {"osl", st.GroupedRatio.OSL}, {"concurrency", st.GroupedRatio.Concurrency}} {
			chart := report.BarChart{Title: "Mean throughput ratio by " + dim.name, XLabel: dim.name, YLabel: "ratio", Reference: 1, ReferenceLabel: "1 = parity"}
			for _, e := range dim.groups {
				row := []string{dim.name, e.Key}
				for _, m := range statMetrics {
					v, _ := e.Value.Get(m)
					row = append(row, num(v))
				}
				g.Table.Rows = append(g.Table.Rows, row)
				if v, ok := e.Value.Get("throughput_tps"); ok && v != nil {
					chart.Labels, chart.Values = append(chart.Labels, e.Key), append(chart.Values, *v)
					chart.Colors = append(chart.Colors, ratioColor("throughput_tps", *v))
				}
			}
			if len(chart.Values) > 1 {
				g.Charts = append(g.Charts, chart)
			}
		}
		out = append(out, g)
	}
	return out
}

// ratioColor: green when the ratio favours the guide (left) side.
func ratioColor(metric string, r float64) string {
	if metric == "throughput_tps" {
		if r >= 1 {
			return colorGood
		}
		return colorBad
	}
	if r <= 1 {
		return colorGood
	}
	return colorBad
}

func dimStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "–"
	case float64:
		return report.Num(x)
	default:
		return fmt.Sprint(x)
	}
}

// topologySections compare guide configurations of one scenario pairwise.
func topologySections(ts []comparison.TopologyComparison) []report.Section {
	s := report.Section{Heading: "Topology comparisons",
		Notes: []string{"Guide configurations of the same scenario, pairwise: ratios are left / right."}}
	header := []string{"left", "right", "left topology", "right topology"}
	metrics := []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "itl_ms", "tpot_ms", "request_latency_ms", "error_rate"}
	for _, m := range metrics {
		header = append(header, metricLabels[m]+" ratio")
	}
	s.Table = &report.Table{Header: header}
	chart := report.BarChart{Title: "Throughput ratio (left / right)", XLabel: "pair", YLabel: "ratio", Reference: 1, ReferenceLabel: "1 = parity"}
	for _, t := range ts {
		row := []string{t.LeftCaseID + " (" + str(t.Left.Guide) + ")", t.RightCaseID + " (" + str(t.Right.Guide) + ")", topologyOf(t.Left), topologyOf(t.Right)}
		for _, m := range metrics {
			if v, ok := t.Ratio.Get(m); ok {
				row = append(row, report.Num(v))
			} else {
				row = append(row, "–")
			}
		}
		s.Table.Rows = append(s.Table.Rows, row)
		if v, ok := t.Ratio.Get("throughput_tps"); ok {
			chart.Labels, chart.Values = append(chart.Labels, t.LeftCaseID+"/"+t.RightCaseID), append(chart.Values, v)
			chart.Colors = append(chart.Colors, ratioColor("throughput_tps", v))
		}
	}
	if len(chart.Values) > 0 {
		s.Charts = []report.Chart{chart}
	}
	out := []report.Section{s}
	for _, t := range ts {
		out = append(out, statisticsSections("Topology "+t.LeftCaseID+" / "+t.RightCaseID, t.LeftCaseID, t.RightCaseID, t.MatrixStatistics, t.RateStageStatistics)...)
	}
	return out
}

// topologyOf describes a configuration's serving topology, e.g. "4×TP1" or "2P×TP1 / 1D×TP2".
func topologyOf(f comparison.Facts) string {
	if f.PrefillReplicas != nil {
		return fmt.Sprintf("%sP×TP%s / %sD×TP%s", intOrDash(f.PrefillReplicas), intOrDash(f.PrefillTensorParallelSize),
			intOrDash(f.DecodeReplicas), intOrDash(f.DecodeTensorParallelSize))
	}
	if f.Replicas == nil && f.TensorParallelSize == nil {
		return "–"
	}
	return fmt.Sprintf("%s×TP%s", intOrDash(f.Replicas), intOrDash(f.TensorParallelSize))
}

func intOrDash(p *int) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprint(*p)
}
