package simreport

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/report"
	"github.com/lensfn/lensfn/runtime/simtask"
)

// build lays out a task's report from its summary and the binned distributions.
func build(t *simtask.Task, s analysis.Summary, d *distributions, now time.Time) report.Page {
	n := report.Num
	p := report.Page{
		Title:     "Simulation report: " + t.Name,
		Subtitle:  fmt.Sprintf("Task %s · %s · model %s · %s · backend %s", t.ID, t.Status, t.ModelName, t.EndpointURL, t.Simulation.Backend),
		Generated: now,
		Facts: []report.Fact{
			{Label: "requests sent", Value: strconv.FormatInt(s.TotalRequests, 10)},
			{Label: "success rate", Value: n(s.SuccessRate) + " %"},
			{Label: "throughput (req/s)", Value: n(s.ThroughputRPS)},
			{Label: "output tokens/s", Value: n(s.ThroughputTPS)},
			{Label: "effective concurrency", Value: n(s.EffectiveConcurrency)},
			{Label: "duration (s)", Value: n(s.DurationSeconds)},
		},
	}
	if s.Latency != nil {
		p.Facts = append(p.Facts, report.Fact{Label: "latency p50 (ms)", Value: n(s.Latency.P50Ms)},
			report.Fact{Label: "latency p99 (ms)", Value: n(s.Latency.P99Ms)})
	}
	if s.TTFT != nil {
		p.Facts = append(p.Facts, report.Fact{Label: "TTFT p50 (ms)", Value: n(s.TTFT.P50Ms)})
	}

	overview := report.Section{Heading: "Overview"}
	if t.Result != nil {
		overview.Warnings = append(overview.Warnings, t.Result.Warnings...)
	}
	if t.ErrorMessage != nil && *t.ErrorMessage != "" {
		overview.Warnings = append(overview.Warnings, "The task ended with an error: "+*t.ErrorMessage)
	}
	if s.ScheduledRequests != nil && s.NotReleasedRequests != nil && *s.NotReleasedRequests > 0 {
		overview.Warnings = append(overview.Warnings, fmt.Sprintf("%d of %d scheduled requests were never sent.", *s.NotReleasedRequests, *s.ScheduledRequests))
	}
	if s.Goodput != nil {
		overview.Notes = append(overview.Notes, fmt.Sprintf("Goodput: %d requests (%s %%) met the objectives, %s req/s.",
			s.Goodput.GoodRequests, n(s.Goodput.GoodRequestPercent), n(s.Goodput.GoodputRPS)))
	}
	overview.Table = distributionTable(s)
	p.Sections = append(p.Sections, overview)

	p.Sections = append(p.Sections, report.Section{Heading: "Distributions",
		Notes: []string{"Successful requests; histograms span each metric's minimum to maximum."},
		Charts: []report.Chart{
			d.ttft.CDF("TTFT CDF", "ms"), d.ttft.Bars("TTFT histogram", "ms"),
			d.tpot.CDF("TPOT CDF", "ms"), d.tpot.Bars("TPOT histogram", "ms"),
			d.latency.CDF("Latency CDF", "ms"), d.latency.Bars("Latency histogram", "ms"),
		}})

	p.Sections = append(p.Sections, report.Section{Heading: "Timelines", Charts: timelines(s)})

	drift := report.Section{Heading: "Schedule drift",
		Notes:  []string{"How late each request was sent versus its schedule (every request, ms)."},
		Charts: []report.Chart{d.drift.Bars("Send drift histogram", "ms late")}}
	if s.Drift != nil {
		drift.Table = &report.Table{Header: []string{"", "p50", "p90", "p99"},
			Rows: [][]string{{"drift (ms)", n(s.Drift.P50Ms), n(s.Drift.P90Ms), n(s.Drift.P99Ms)}}}
	}
	p.Sections = append(p.Sections, drift)

	codes := report.Section{Heading: "Status codes", Table: &report.Table{Header: []string{"status", "requests", "%"}}}
	bar := report.BarChart{Title: "Responses by status code", XLabel: "status", YLabel: "requests"}
	for _, c := range s.StatusCodeBreakdown {
		label, color := "no response", "#D55E00"
		if c.StatusCode != nil {
			label = strconv.Itoa(*c.StatusCode)
			if *c.StatusCode < 400 {
				color = "#009E73"
			}
		}
		bar.Labels, bar.Values, bar.Colors = append(bar.Labels, label), append(bar.Values, float64(c.Count)), append(bar.Colors, color)
		codes.Table.Rows = append(codes.Table.Rows, []string{label, strconv.FormatInt(c.Count, 10), n(c.Percentage)})
	}
	codes.Charts = []report.Chart{bar}
	p.Sections = append(p.Sections, codes)
	return p
}

func distributionTable(s analysis.Summary) *report.Table {
	tb := &report.Table{Header: []string{"metric (ms)", "count", "mean", "p50", "p90", "p95", "p99", "min", "max"}}
	n := report.Num
	for _, row := range []struct {
		name string
		d    *analysis.Distribution
	}{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"latency", s.Latency}, {"session timeline drift", s.SessionTimelineDrift}} {
		if row.d == nil {
			continue
		}
		d := row.d
		tb.Rows = append(tb.Rows, []string{row.name, strconv.FormatInt(d.Count, 10), n(d.MeanMs), n(d.P50Ms), n(d.P90Ms),
			n(d.P95Ms), n(d.P99Ms), n(d.MinMs), n(d.MaxMs)})
	}
	return tb
}

func timelines(s analysis.Summary) []report.Chart {
	var arrived, completed, failed report.Series
	arrived.Name, completed.Name, failed.Name = "arrived (cumulative)", "completed (cumulative)", "failed (cumulative)"
	for _, b := range s.CompletionTimeline {
		arrived.X, arrived.Y = append(arrived.X, b.EndSeconds), append(arrived.Y, float64(b.CumulativeArrived))
		completed.X, completed.Y = append(completed.X, b.EndSeconds), append(completed.Y, float64(b.CumulativeCompleted))
	}
	var inRPS, outRPS, tps report.Series
	inRPS.Name, outRPS.Name, tps.Name = "arrivals/s", "completions/s", "output tokens/s"
	for _, b := range s.ThroughputTimeline {
		inRPS.X, inRPS.Y = append(inRPS.X, b.StartSeconds), append(inRPS.Y, b.RequestArrivalRPS)
		outRPS.X, outRPS.Y = append(outRPS.X, b.StartSeconds), append(outRPS.Y, b.RequestCompletionRPS)
		tps.X, tps.Y = append(tps.X, b.StartSeconds), append(tps.Y, b.TokenThroughputTPS)
	}
	var rate report.Series
	rate.Name = "error rate %"
	for _, b := range s.ErrorTimeline {
		failed.X, failed.Y = append(failed.X, b.EndSeconds), append(failed.Y, float64(b.CumulativeFailures))
		rate.X, rate.Y = append(rate.X, b.StartSeconds), append(rate.Y, b.ErrorRatePercent)
	}
	latency := func(title string, bins []analysis.LatencyBin) report.Chart {
		avg, p95 := report.Series{Name: "average"}, report.Series{Name: "p95"}
		for _, b := range bins {
			if b.AverageLatencyMs != nil {
				avg.X, avg.Y = append(avg.X, b.StartSeconds), append(avg.Y, *b.AverageLatencyMs)
			}
			if b.P95LatencyMs != nil {
				p95.X, p95.Y = append(p95.X, b.StartSeconds), append(p95.Y, *b.P95LatencyMs)
			}
		}
		return report.LineChart{Title: title, XLabel: "seconds since start (by send time)", YLabel: "ms", Series: []report.Series{avg, p95}}
	}
	return []report.Chart{
		report.LineChart{Title: "Completion timeline", XLabel: "seconds since start", YLabel: "requests", Step: true,
			Series: []report.Series{arrived, completed, failed}},
		report.LineChart{Title: "Request throughput", XLabel: "seconds since start", YLabel: "requests/s", Series: []report.Series{inRPS, outRPS}},
		report.LineChart{Title: "Token throughput", XLabel: "seconds since start", YLabel: "tokens/s", Series: []report.Series{tps}},
		report.LineChart{Title: "Error rate", XLabel: "seconds since start", YLabel: "% of completions", Series: []report.Series{rate}},
		latency("Latency over time", s.LatencyTimeline),
		latency("TTFT over time", s.TTFTTimeline),
	}
}
