package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lensfn/lensfn/runtime/report"
)

// This file reads a benchmark run's record (and an evaluation's SLA verdicts) into what its
// page shows: the SLA verdict with each target's margin, headline tiles, the percentile table,
// the charts and the per-stage rows. Every number comes from the record; an absent one shows
// as "–", never as 0.

// slaView is an SLA verdict: met, missed or "" (no targets), and its checks.
type slaView struct {
	Verdict string
	// Summary says it in a sentence ("2 of 2 targets met", "TTFT p99 missed by 310 ms").
	Summary string
	Checks  []checkView
	// Repetitions, with repetitions: how many met every target ("2 of 3 repetitions").
	Repetitions string
}

// checkView is one SLA target's check.
type checkView struct {
	Key, Name, Target, Actual, Margin, MarginPercent, State, Repetitions string
}

// slaChecks are the checks in the order a reader scans them, with their names and bounds.
var slaChecks = []struct{ key, name, bound string }{
	{"ttft", "TTFT", "≤"}, {"tpot", "TPOT", "≤"}, {"throughput", "Output throughput", "≥"}, {"success_rate", "Success rate", "≥"},
}

// readSLA reads an SLA verdict (events.SLAVerdict as JSON); nil or no checks is no targets.
func readSLA(v any) slaView {
	var s slaView
	checks, _ := get(v, "checks").(map[string]any)
	if len(checks) == 0 {
		return s
	}
	switch get(v, "met") {
	case true:
		s.Verdict = "met"
	case false:
		s.Verdict = "missed"
	default:
		s.Verdict = "unknown"
	}
	met, missed := 0, []string{}
	seen := map[string]bool{}
	add := func(key, name, bound string) {
		c, ok := checks[key].(map[string]any)
		if !ok {
			return
		}
		seen[key] = true
		unit := str(c["unit"])
		if p := str(c["percentile"]); p != "" {
			name += " " + p
		}
		cv := checkView{Key: key, Name: name, Target: strings.TrimSpace(bound + " " + withUnit(c["target"], unit)),
			Actual: withUnit(c["actual"], unit), Margin: "–", MarginPercent: "–", State: "unknown"}
		if m, ok := c["margin"].(float64); ok {
			side := "inside"
			if m < 0 {
				side = "past"
			}
			cv.Margin = withUnit(math.Abs(m), unit) + " " + side
		}
		if p, ok := c["margin_percent"].(float64); ok {
			// A share of the limit reads in tenths of a percent; the API keeps three decimals.
			if math.Abs(p) < 0.05 {
				p = 0 // never "-0.0"
			}
			cv.MarginPercent = fmt.Sprintf("%+.1f %%", p)
		}
		switch c["met"] {
		case true:
			cv.State = "met"
			met++
		case false:
			cv.State = "missed"
			missed = append(missed, name+" ("+cv.Actual+" against "+cv.Target+")")
		}
		if rm, r := c["repetitions_met"], c["repetitions"]; rm != nil && r != nil {
			cv.Repetitions = str(rm) + " of " + str(r)
		}
		s.Checks = append(s.Checks, cv)
	}
	for _, k := range slaChecks {
		add(k.key, k.name, k.bound)
	}
	var rest []string
	for k := range checks {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		add(k, k, "")
	}
	switch {
	case len(missed) > 0:
		s.Summary = "Missed: " + strings.Join(missed, "; ")
	default:
		s.Summary = fmt.Sprintf("%d of %d targets met", met, len(s.Checks))
	}
	if rm, r := get(v, "repetitions_met"), get(v, "repetitions"); rm != nil && r != nil {
		s.Repetitions = str(rm) + " of " + str(r) + " repetitions met every target"
	}
	return s
}

// withUnit writes a number with its unit ("78.06 ms", "99 %"); "–" when absent.
func withUnit(v any, unit string) string {
	f, ok := v.(float64)
	if !ok {
		return "–"
	}
	if unit == "" {
		return report.Num(f)
	}
	return report.Num(f) + " " + unit
}

// tile is one headline number.
type tile struct {
	Key, Label, Value, Unit, Note string
}

// headlineTiles are the run's headline numbers: metric key, label, unit.
var headlineTiles = []struct{ key, label, unit string }{
	{"throughput_tps", "Output throughput", "tok/s"}, {"input_throughput_tps", "Input throughput", "tok/s"},
	{"throughput_rps", "Request rate", "req/s"}, {"ttft_ms", "TTFT p50", "ms"}, {"itl_ms", "ITL p50", "ms"},
	{"request_latency_ms", "Latency p50", "ms"}, {"success_rate", "Success rate", "%"}, {"slo_goodput_rps", "SLO goodput", "req/s"},
	{"maximum_stable_qps", "Max stable QPS", "req/s"}, {"benchmark_time_seconds", "Benchmark time", "s"},
}

// readTiles reads a metrics object's headline numbers (absent ones are left out, but for the
// request counts, which always show).
func readTiles(metrics any) []tile {
	var out []tile
	if n, ok := get(metrics, "request_count").(float64); ok {
		t := tile{Key: "request_count", Label: "Requests measured", Value: report.Num(n)}
		if f, ok := get(metrics, "failure_count").(float64); ok {
			t.Note = report.Num(f) + " failed"
		}
		out = append(out, t)
	}
	for _, h := range headlineTiles {
		v, ok := get(metrics, h.key).(float64)
		if !ok {
			continue
		}
		out = append(out, tile{Key: h.key, Label: h.label, Value: report.Num(v), Unit: h.unit})
	}
	return out
}

// distribution is one row of the percentile table.
type distribution struct {
	Key, Label string
	Cells      []string
}

// percentileColumns are the table's columns: the keys under a distribution (with _ms for the
// latency ones).
var percentileColumns = []string{"min", "p50", "p75", "p90", "p95", "p99", "max", "mean"}

// distributions are the rows: where they are in the metrics and their labels.
var distributions = []struct{ path, label string }{
	{"latency_distributions.ttft", "TTFT"},
	{"latency_distributions.itl", "ITL (per token after the first)"},
	{"latency_distributions.tpot", "TPOT"},
	{"latency_distributions.ntpot", "NTPOT (latency / output tokens)"},
	{"latency_distributions.request_latency", "Request latency"},
	{"latency_distributions.chunk_gap", "Chunk gap (stream delivery)"},
	{"schedule_delay", "Schedule delay (send − planned)"},
}

func readPercentiles(metrics any) []distribution {
	var out []distribution
	for _, d := range distributions {
		m, ok := get(metrics, d.path).(map[string]any)
		if !ok {
			continue
		}
		row := distribution{Key: d.path[strings.LastIndex(d.path, ".")+1:], Label: d.label}
		any := false
		for _, c := range percentileColumns {
			v, ok := m[c+"_ms"].(float64)
			if ok {
				any = true
				row.Cells = append(row.Cells, report.Num(v))
			} else {
				row.Cells = append(row.Cells, "–")
			}
		}
		if any {
			out = append(out, row)
		}
	}
	return out
}

// percentileCharts draw the latency percentiles: request-level times (TTFT, latency) and
// per-token times (ITL, TPOT, NTPOT), each a line over p50 … p99.
func percentileCharts(metrics any) []template.HTML {
	xs := []float64{50, 75, 90, 95, 99}
	series := func(path, name string) (report.Series, bool) {
		s := report.Series{Name: name}
		for _, p := range xs {
			v, ok := get(metrics, path+".p"+strconv.Itoa(int(p))+"_ms").(float64)
			if !ok {
				return s, false
			}
			s.X, s.Y = append(s.X, p), append(s.Y, v)
		}
		return s, true
	}
	var out []template.HTML
	for _, group := range []struct {
		title string
		parts [][2]string
	}{
		{"Request times by percentile", [][2]string{{"latency_distributions.ttft", "TTFT"}, {"latency_distributions.request_latency", "request latency"}}},
		{"Per-token times by percentile", [][2]string{{"latency_distributions.itl", "ITL"}, {"latency_distributions.tpot", "TPOT"}, {"latency_distributions.ntpot", "NTPOT"}}},
	} {
		chart := report.LineChart{Title: group.title, XLabel: "percentile", YLabel: "ms"}
		for _, p := range group.parts {
			if s, ok := series(p[0], p[1]); ok {
				chart.Series = append(chart.Series, s)
			}
		}
		if len(chart.Series) > 0 {
			out = append(out, chart.SVG())
		}
	}
	return out
}

// stageView is one stage of a run (a matrix point or a rate stage).
type stageView struct {
	Label                                                         string
	Requests, Success, Throughput, TTFT50, TTFT99, Latency50, ITL string
	SLA                                                           string
}

// readStages reads a run's matrix points and rate stages, with the charts of their throughput
// and TTFT when there are two or more.
func readStages(run map[string]any) ([]stageView, []template.HTML) {
	var rows []stageView
	tput := report.BarChart{Title: "Output throughput by stage", XLabel: "stage", YLabel: "tok/s"}
	ttft := report.BarChart{Title: "TTFT p50 and p99 by stage", XLabel: "stage", YLabel: "ms"}
	var ttft99 []float64
	for _, part := range []struct {
		key  string
		dims []string
	}{{"matrix_results", []string{"isl", "osl", "concurrency"}}, {"rate_stage_results", []string{"rate", "duration"}}} {
		list, _ := run[part.key].([]any)
		for _, st := range list {
			label := stageLabel(st, part.key == "rate_stage_results")
			m := get(st, "metrics")
			row := stageView{Label: label, Requests: num(get(m, "request_count")), Success: withUnit(get(m, "success_rate"), "%"),
				Throughput: num(get(m, "throughput_tps")), TTFT50: num(get(m, "latency_distributions.ttft.p50_ms")),
				TTFT99: num(get(m, "latency_distributions.ttft.p99_ms")), Latency50: num(get(m, "latency_distributions.request_latency.p50_ms")),
				ITL: num(get(m, "itl_ms"))}
			if s := readSLA(get(st, "sla")); s.Verdict != "" {
				row.SLA = s.Verdict
			}
			for _, c := range []*string{&row.Requests, &row.Throughput, &row.TTFT50, &row.TTFT99, &row.Latency50, &row.ITL} {
				if *c == "" {
					*c = "–"
				}
			}
			rows = append(rows, row)
			tput.Labels, tput.Values = append(tput.Labels, label), append(tput.Values, number(get(m, "throughput_tps")))
			ttft.Labels, ttft.Values = append(ttft.Labels, label), append(ttft.Values, number(get(m, "latency_distributions.ttft.p50_ms")))
			ttft99 = append(ttft99, number(get(m, "latency_distributions.ttft.p99_ms")))
		}
	}
	if len(rows) < 2 {
		return rows, nil
	}
	// p99 as the interval's top: the bar is the median, the whisker how far the tail goes.
	ttft.Low, ttft.High = append([]float64(nil), ttft.Values...), ttft99
	return rows, []template.HTML{tput.SVG(), ttft.SVG()}
}

// stageLabel names a stage by its dimensions ("4 req/s × 6 s", "isl 128 · osl 32 · c 2").
func stageLabel(st any, rate bool) string {
	if rate {
		return num(get(st, "rate")) + " req/s × " + num(get(st, "duration")) + " s"
	}
	var parts []string
	for _, d := range []struct{ key, name string }{{"isl", "isl"}, {"osl", "osl"}, {"concurrency", "c"}} {
		if v := get(st, d.key); v != nil {
			parts = append(parts, d.name+" "+num(v))
		}
	}
	if len(parts) == 0 {
		return "stage"
	}
	return strings.Join(parts, " · ")
}

// number is a JSON number, NaN when absent (a chart leaves it out).
func number(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return math.NaN()
}

// hasArtifact says whether a record lists an artifact of kind.
func hasArtifact(record map[string]any, kind string) bool {
	arts, _ := record["artifacts"].([]any)
	for _, a := range arts {
		if str(get(a, "kind")) == kind {
			return true
		}
	}
	return false
}

// rawJSON is a record as indented JSON for the page's disclosure.
func rawJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return b.String()
}

// workloadSummary says in a line what a run sent.
func workloadSummary(run map[string]any) string {
	b := get(run, "benchmark")
	if sp, ok := get(b, "shared_prefix").(map[string]any); ok {
		stages, _ := sp["stages"].([]any)
		var parts []string
		for _, st := range stages {
			parts = append(parts, num(get(st, "rate"))+" req/s for "+num(get(st, "duration"))+" s")
		}
		return fmt.Sprintf("shared prefix: %s groups × %s prompts, system prompt %s + question %s tokens, %s output tokens; %s",
			num(sp["num_groups"]), num(sp["num_prompts_per_group"]), num(sp["system_prompt_len"]), num(sp["question_len"]),
			num(sp["output_len"]), strings.Join(parts, ", "))
	}
	var parts []string
	if w := str(get(b, "workload")); w != "" {
		parts = append(parts, w)
	}
	if h := str(get(b, "harness")); h != "" {
		parts = append(parts, "harness "+h)
	}
	if m, ok := get(b, "matrix").([]any); ok && len(m) > 0 {
		parts = append(parts, fmt.Sprintf("%d matrix points", len(m)))
	}
	if c, ok := get(b, "concurrency_stages").([]any); ok && len(c) > 0 {
		parts = append(parts, fmt.Sprintf("%d concurrency stages", len(c)))
	}
	if r := get(b, "repetitions"); r != nil && str(r) != "1" {
		parts = append(parts, str(r)+" repetitions")
	}
	return strings.Join(parts, " · ")
}
