package runreport_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/report"
	"github.com/lensfn/lensfn/runtime/report/runreport"
)

func ptr[T any](v T) *T { return &v }

// finishedRun writes n records per concurrency stage of one matrix point (each stage's clock
// starts at zero, as the runner's schedules do; every tenth request a 503 whose error looks
// like a formula) and returns a succeeded run whose metrics and SLA verdict evalrun computed
// from them, as the runner stores them.
func finishedRun(t *testing.T, n int) (*evalrun.Run, string, evalrun.Metrics) {
	t.Helper()
	path := filepath.Join(t.TempDir(), evalrun.RecordsFile)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	targets := &events.SLATargets{TTFTMs: ptr(10.0), TTFTPercentile: ptr("p99"), SuccessRateMinPercent: ptr(50.0)}
	total := evalrun.NewBuilder(targets)
	enc := json.NewEncoder(f)
	var stages []map[string]any
	for stage, concurrency := range []int{1, 8} {
		b := evalrun.NewBuilder(targets)
		for i := 1; i <= n; i++ {
			start := float64(i) * 0.1
			rec := loadgen.Record{RequestID: int64(i), StatusCode: ptr(200), Successful: true, ScheduledAtSeconds: start,
				StartedAtSeconds: start + 0.002, LatencyMs: 100 + float64(i), TTFTMs: ptr(20 + float64(i%7)), TPOTMs: ptr(5.0),
				FirstTokenAtSeconds: ptr(start + 0.03), CompletedAtSeconds: start + 0.1, InputTokens: 64, OutputTokens: 16,
				Metadata: map[string]any{"phase": "matrix-0", "stage": stage, "worker": 0}}
			if i%10 == 0 {
				rec.StatusCode, rec.Successful, rec.TTFTMs, rec.TPOTMs, rec.FirstTokenAtSeconds = ptr(503), false, nil, nil, nil
				rec.Error = ptr("=HYPERLINK(\"x\") upstream busy")
			}
			if err := enc.Encode(rec); err != nil {
				t.Fatal(err)
			}
			b.Add(rec, nil)
			total.Add(rec, nil)
		}
		stages = append(stages, map[string]any{"concurrency": concurrency, "num_requests": n, "metrics": b.Metrics(path)})
	}
	f.Close()
	m := total.Metrics(path)
	run := evalrun.New("3f1c0a9e-0000-4000-8000-000000000001")
	run.Status = evalrun.StatusSucceeded
	run.Model = evalrun.Ptr("Qwen/<b>Qwen3</b>")
	run.Endpoint = evalrun.Ptr("http://127.0.0.1:8000/v1")
	run.Metrics = evalrun.JSON(m)
	run.SLA = evalrun.EvaluateSLA(m, targets)
	run.MatrixResults = evalrun.JSON([]map[string]any{{"isl": 64, "osl": 16, "status": "succeeded", "stderr": "", "metrics": m, "stage_metrics": stages}})
	// What the store gives back: the run as JSON.
	doc, _ := evalrun.Marshal(run)
	stored, err := evalrun.Unmarshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var metrics evalrun.Metrics
	evalrun.Decode(stored.Metrics, &metrics)
	return stored, path, metrics
}

func TestHTMLReportIsSelfContainedAndShowsTheRun(t *testing.T) {
	run, path, m := finishedRun(t, 100)
	var buf bytes.Buffer
	if err := runreport.WriteHTML(&buf, run, path, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	dists := m["latency_distributions"].(map[string]any)
	p99TTFT := dists["ttft"].(map[string]any)["p99_ms"].(float64)
	for _, want := range []string{
		"<!DOCTYPE html>", "Benchmark run report: 3f1c0a9e", "TTFT CDF", "TPOT histogram", "Latency CDF",
		"Completion timeline", "Request throughput", "Token throughput", "Error rate", "Send delay histogram",
		"Responses by status code", "Matrix results", "Output throughput by stage", "64/16 c1", "64/16 c8",
		"The SLA was missed.", "<td>ttft</td><td>p99</td><td>10</td><td>" + report.Num(p99TTFT) + "</td><td>ms</td><td>missed</td>",
		"<td>success_rate</td>", "Qwen/&lt;b&gt;Qwen3&lt;/b&gt;", report.Num(m["throughput_tps"].(float64)),
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if got := strings.Count(html, "<svg"); got < 16 || got != strings.Count(html, "</svg>") {
		t.Errorf("%d charts (want distributions, timelines, delay, stages, status codes; balanced)", got)
	}
	if regexp.MustCompile(`(?i)(https?:|//[a-z]|<script|url\(|<link|<img|@import)`).
		MatchString(strings.ReplaceAll(html, "http://127.0.0.1:8000/v1", "")) {
		t.Error("report references something outside itself")
	}
	if strings.Contains(html, "NaN") || strings.Contains(html, "Inf") {
		t.Error("a non-finite number reached the SVG")
	}
	// 20 of 200 requests were 503s, across both stages.
	if !strings.Contains(html, "<title>503: 20</title>") || !strings.Contains(html, "<title>200: 180</title>") {
		t.Error("status bars do not carry their counts")
	}
	// The two stages' clocks are laid back to back: the completion timeline spans 20 s of
	// traffic, not the 10 s of one stage.
	timeline := html[strings.Index(html, "<title>Completion timeline</title>"):]
	timeline = timeline[:strings.Index(timeline, "</svg>")]
	if !strings.Contains(timeline, ">20</text>") {
		t.Errorf("the completion timeline does not reach 20 s: %s", timeline)
	}
}

func TestHTMLReportOfARunWithoutRecords(t *testing.T) {
	run := evalrun.New("r-1")
	run.Status = evalrun.StatusFailed
	run.Error = rawjson.Some("monitoring not ready: vllm:num_requests_running has no samples")
	var buf bytes.Buffer
	if err := runreport.WriteHTML(&buf, run, filepath.Join(t.TempDir(), "none.jsonl"), time.Now()); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"The run ended with an error: monitoring not ready", "No SLA targets were configured", "The run has no metrics yet"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestCSVHasEveryRecordWithPhaseAndStage(t *testing.T) {
	_, path, _ := finishedRun(t, 50)
	var buf bytes.Buffer
	if err := runreport.WriteCSV(&buf, path); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 101 {
		t.Fatalf("%d rows, want a header and 100 records", len(rows))
	}
	head := strings.Join(rows[0], ",")
	if !strings.HasPrefix(head, "request_id,session_id,turn,status_code,") || !strings.HasSuffix(head, ",phase,stage,worker") {
		t.Fatalf("header %s", head)
	}
	last := rows[100]
	if last[0] != "50" || last[3] != "503" || !strings.HasPrefix(last[5], "'=HYPERLINK") || last[16] != "matrix-0" || last[17] != "1" {
		t.Fatalf("last row %v", last)
	}
	if err := runreport.WriteCSV(&buf, filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing records: %v", err)
	}
}

// timelinePath is the completed-requests line of the completion timeline.
func timelinePath(t *testing.T, html string) string {
	t.Helper()
	m := regexp.MustCompile(`<path d="([^"]*)"[^>]*><title>completed \(cumulative\)</title>`).FindStringSubmatch(html)
	if m == nil {
		t.Fatal("no completion line")
	}
	return m[1]
}

// TestTimelinesResolveShortAndLongRuns: a half-second run still gets a drawn timeline, and a
// run a day long gets one of the same bounded size.
func TestTimelinesResolveShortAndLongRuns(t *testing.T) {
	for name, span := range map[string]float64{"half a second": 0.5, "a day": 86400} {
		path := filepath.Join(t.TempDir(), evalrun.RecordsFile)
		f, _ := os.Create(path)
		enc := json.NewEncoder(f)
		for i := range 1000 {
			at := span * float64(i) / 1000
			_ = enc.Encode(loadgen.Record{RequestID: int64(i + 1), StatusCode: ptr(200), Successful: true, ScheduledAtSeconds: at,
				StartedAtSeconds: at, CompletedAtSeconds: at + span/1000, LatencyMs: 10, Metadata: map[string]any{"phase": "benchmark"}})
		}
		f.Close()
		run := evalrun.New("r")
		run.Status = evalrun.StatusSucceeded
		var buf bytes.Buffer
		if err := runreport.WriteHTML(&buf, run, path, time.Now()); err != nil {
			t.Fatal(err)
		}
		points := strings.Count(timelinePath(t, buf.String()), "V")
		if points < 50 || points > 120 {
			t.Errorf("%s: %d timeline points, want 50-120", name, points)
		}
	}
}

// A repeated run's report shows the SLA margins, how many repetitions met each target, and the
// spread of its headline metrics across the repetitions.
func TestHTMLReportShowsMarginsAndRepetitions(t *testing.T) {
	run, path, m := finishedRun(t, 20)
	m["repetitions"] = 3.0
	m["repetition_spread"] = map[string]any{"ttft_ms": map[string]any{"repetitions": 3.0, "mean": 23.5, "stddev": 1.25, "cv_percent": 5.319, "min": 22.0, "max": 25.0}}
	run.Metrics = evalrun.JSON(m)
	run.SLA = nil
	_ = json.Unmarshal(evalrun.JSON(map[string]any{"met": false, "repetitions_met": 1, "repetitions": 3, "checks": map[string]any{
		"ttft": map[string]any{"actual": 26.0, "target": 10.0, "unit": "ms", "percentile": "p99", "met": false, "margin": -16.0,
			"margin_percent": -160.0, "repetitions_met": 1, "repetitions": 3}}}), &run.SLA)
	var buf bytes.Buffer
	if err := runreport.WriteHTML(&buf, run, path, time.Now()); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"<td>missed</td><td>-16</td><td>-160</td><td>1 of 3</td>", "1 of 3 repetitions met every target",
		"<h2>Repetitions</h2>", "<td>ttft_ms</td><td>3</td><td>23.500</td><td>1.250</td><td>5.319</td><td>22</td><td>25</td>",
		"ITL (per-token decode interval)"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
