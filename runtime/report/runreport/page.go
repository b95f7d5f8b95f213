package runreport

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/report"
)

// build lays out a run's report from its record and the binned records.
func build(run *evalrun.Run, m evalrun.Metrics, d *distributions, now time.Time) report.Page {
	p := report.Page{
		Title: "Benchmark run report: " + run.ID,
		Subtitle: fmt.Sprintf("%s · model %s · %s · execution %s · harness %s", run.Status, evalrun.Str(run.Model),
			evalrun.Str(run.Endpoint), evalrun.Str(run.DeploymentExecutionID), evalrun.Str(run.Harness)),
		Generated: now,
	}
	fact := func(label, key, unit string) {
		if v, ok := m.Float(key); ok {
			p.Facts = append(p.Facts, report.Fact{Label: label, Value: report.Num(v) + unit})
		}
	}
	if v, ok := m["request_count"].(float64); ok {
		p.Facts = append(p.Facts, report.Fact{Label: "measured requests", Value: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	fact("success rate", "success_rate", " %")
	fact("output tokens/s", "throughput_tps", "")
	fact("requests/s", "throughput_rps", "")
	fact("TTFT p50 (ms)", "ttft_ms", "")
	fact("TPOT p50 (ms)", "tpot_ms", "")
	fact("ITL p50 (ms)", "itl_ms", "")
	fact("latency p50 (ms)", "request_latency_ms", "")
	fact("benchmark time (s)", "benchmark_time_seconds", "")

	overview := report.Section{Heading: "Overview"}
	if e := run.ErrorText(); e != "" {
		overview.Warnings = append(overview.Warnings, "The run ended with an error: "+e)
	}
	if !evalrun.Terminal(run.Status) {
		overview.Warnings = append(overview.Warnings, "The run is "+run.Status+"; this report shows it as far as it got.")
	}
	if len(m) == 0 {
		overview.Notes = append(overview.Notes, "The run has no metrics yet.")
	}
	overview.Table = distributionTable(m)
	if overview.Table != nil {
		overview.Notes = append(overview.Notes, "ITL is each request's (latency − TTFT) / (output tokens − 1); the chunk gap is the time between "+
			"the stream's chunks, near 0 ms when a server sends several tokens in one write.")
	}
	p.Sections = append(p.Sections, overview, slaSection(run, &p))
	if sec, ok := repetitionSection(m); ok {
		p.Sections = append(p.Sections, sec)
	}

	p.Sections = append(p.Sections, report.Section{Heading: "Distributions",
		Notes: []string{"Successful measured requests; histograms span each metric's minimum to maximum."},
		Charts: []report.Chart{
			d.ttft.CDF("TTFT CDF", "ms"), d.ttft.Bars("TTFT histogram", "ms"),
			d.tpot.CDF("TPOT CDF", "ms"), d.tpot.Bars("TPOT histogram", "ms"),
			d.latency.CDF("Latency CDF", "ms"), d.latency.Bars("Latency histogram", "ms"),
		}})
	p.Sections = append(p.Sections, report.Section{Heading: "Timelines", Charts: d.timelines()})
	p.Sections = append(p.Sections, report.Section{Heading: "Schedule delay",
		Notes:  []string{"How late each measured request was sent versus its schedule (ms)."},
		Charts: []report.Chart{d.delay.Bars("Send delay histogram", "ms late")}})
	p.Sections = append(p.Sections, stageSections(run)...)
	p.Sections = append(p.Sections, d.statusCodes())
	return p
}

// slaSection shows the verdict and each check; a missed SLA is a warning and a fact.
func slaSection(run *evalrun.Run, p *report.Page) report.Section {
	sec := report.Section{Heading: "SLA"}
	if run.SLA == nil || run.SLA.Checks == nil {
		sec.Notes = []string{"No SLA targets were configured."}
		return sec
	}
	sla := *run.SLA
	verdict := verdictText(sla.Met)
	p.Facts = append([]report.Fact{{Label: "SLA", Value: verdict}}, p.Facts...)
	if sla.Met != nil && !*sla.Met {
		sec.Warnings = append(sec.Warnings, "The SLA was missed.")
	}
	sec.Table = &report.Table{Header: []string{"check", "percentile", "target", "actual", "unit", "verdict", "margin", "margin %", "repetitions met"}}
	for _, name := range sortedKeys(sla.Checks) {
		c := sla.Checks[name]
		actual := "unavailable"
		if c.Actual != nil {
			actual = report.Num(*c.Actual)
		}
		sec.Table.Rows = append(sec.Table.Rows, []string{name, c.Percentile, report.Num(c.Target), actual, c.Unit, verdictText(c.Met),
			optNum(c.Margin), optNum(c.MarginPercent), ofCount(c.RepetitionsMet, c.Repetitions)})
	}
	sec.Notes = append(sec.Notes, "The margin is how far the actual value is inside its target (negative: past it).")
	if sla.Repetitions != nil {
		sec.Notes = append(sec.Notes, ofCount(sla.RepetitionsMet, sla.Repetitions)+" repetitions met every target.")
	}
	return sec
}

func optNum(v *float64) string {
	if v == nil {
		return "–"
	}
	return report.Num(*v)
}

// ofCount is "k of n", or "–".
func ofCount(k, n *int) string {
	if k == nil || n == nil {
		return "–"
	}
	return fmt.Sprintf("%d of %d", *k, *n)
}

// repetitionSection shows the spread of the headline metrics across a run's repetitions.
func repetitionSection(m evalrun.Metrics) (report.Section, bool) {
	spread, _ := m["repetition_spread"].(map[string]any)
	if len(spread) == 0 {
		return report.Section{}, false
	}
	sec := report.Section{Heading: "Repetitions",
		Notes: []string{"The spread of each headline metric across the run's repetitions (stddev: sample standard deviation)."},
		Table: &report.Table{Header: []string{"metric", "repetitions", "mean", "stddev", "CV %", "min", "max"}}}
	for _, k := range evalrun.RepeatedMetrics {
		d, ok := spread[k].(map[string]any)
		if !ok {
			continue
		}
		row := []string{k}
		for _, f := range []string{"repetitions", "mean", "stddev", "cv_percent", "min", "max"} {
			cell := "–"
			if v, ok := d[f].(float64); ok {
				cell = report.Num(v)
			}
			row = append(row, cell)
		}
		sec.Table.Rows = append(sec.Table.Rows, row)
	}
	return sec, true
}

func verdictText(met *bool) string {
	switch {
	case met == nil:
		return "unknown"
	case *met:
		return "met"
	}
	return "missed"
}

func distributionTable(m evalrun.Metrics) *report.Table {
	dists, _ := m["latency_distributions"].(map[string]any)
	tb := &report.Table{Header: []string{"metric (ms)", "mean", "p50", "p90", "p95", "p99", "min", "max"}}
	for _, row := range []struct{ name, key string }{{"TTFT", "ttft"}, {"TPOT", "tpot"},
		{"ITL (per-token decode interval)", "itl"}, {"chunk gap (between stream chunks)", "chunk_gap"}, {"latency", "request_latency"}} {
		d, _ := dists[row.key].(map[string]any)
		if len(d) == 0 {
			continue
		}
		cells := []string{row.name}
		for _, k := range []string{"mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "min_ms", "max_ms"} {
			v, _ := d[k].(float64)
			cells = append(cells, report.Num(v))
		}
		tb.Rows = append(tb.Rows, cells)
	}
	if len(tb.Rows) == 0 {
		return nil
	}
	return tb
}

// stage is one bar of the per-stage charts.
type stage struct {
	label   string
	metrics map[string]any
}

// stageSections charts matrix points x concurrency stages and rate stages side by side.
func stageSections(run *evalrun.Run) []report.Section {
	var out []report.Section
	var matrix []struct {
		ISL, OSL     float64
		Status       string
		Stderr       string
		StageMetrics []struct {
			Concurrency float64        `json:"concurrency"`
			Metrics     map[string]any `json:"metrics"`
		} `json:"stage_metrics"`
	}
	if evalrun.Decode(run.MatrixResults, &matrix) && len(matrix) > 0 {
		var stages []stage
		var warnings []string
		for _, pt := range matrix {
			for _, st := range pt.StageMetrics {
				stages = append(stages, stage{fmt.Sprintf("%g/%g c%g", pt.ISL, pt.OSL, st.Concurrency), st.Metrics})
			}
			if pt.Status == "failed" {
				warnings = append(warnings, fmt.Sprintf("Matrix point ISL %g / OSL %g failed: %s", pt.ISL, pt.OSL, pt.Stderr))
			}
		}
		sec := stageCharts("Matrix results (ISL/OSL, concurrency)", stages)
		sec.Warnings = warnings
		out = append(out, sec)
	}
	var rates []struct {
		Rate, Duration float64
		Metrics        map[string]any `json:"metrics"`
	}
	if evalrun.Decode(run.RateStageResults, &rates) && len(rates) > 0 {
		stages := make([]stage, 0, len(rates))
		for _, st := range rates {
			stages = append(stages, stage{fmt.Sprintf("%g req/s", st.Rate), st.Metrics})
		}
		out = append(out, stageCharts("Rate stages", stages))
	}
	return out
}

func stageCharts(heading string, stages []stage) report.Section {
	sec := report.Section{Heading: heading,
		Table: &report.Table{Header: []string{"stage", "requests", "success %", "output tok/s", "req/s", "TTFT p50 ms", "TPOT p50 ms", "latency p50 ms"}}}
	keys := []string{"request_count", "success_rate", "throughput_tps", "throughput_rps", "ttft_ms", "tpot_ms", "request_latency_ms"}
	charts := map[string]*report.BarChart{}
	for _, k := range []struct{ key, title, unit string }{
		{"throughput_tps", "Output throughput by stage", "tokens/s"}, {"ttft_ms", "TTFT p50 by stage", "ms"},
		{"tpot_ms", "TPOT p50 by stage", "ms"}, {"success_rate", "Success rate by stage", "%"},
	} {
		charts[k.key] = &report.BarChart{Title: k.title, XLabel: "stage", YLabel: k.unit}
	}
	for _, st := range stages {
		row := []string{st.label}
		for _, k := range keys {
			v, ok := st.metrics[k].(float64)
			if !ok {
				row = append(row, "–")
				continue
			}
			row = append(row, report.Num(v))
			if c := charts[k]; c != nil {
				c.Labels, c.Values = append(c.Labels, st.label), append(c.Values, v)
			}
		}
		sec.Table.Rows = append(sec.Table.Rows, row)
	}
	for _, k := range []string{"throughput_tps", "ttft_ms", "tpot_ms", "success_rate"} {
		sec.Charts = append(sec.Charts, *charts[k])
	}
	return sec
}
