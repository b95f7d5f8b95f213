package simreport_test

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/report"
	"github.com/lensfn/lensfn/runtime/report/simreport"
	"github.com/lensfn/lensfn/runtime/simtask"
)

func ptr[T any](v T) *T { return &v }

// finishedTask writes n records (every tenth a 503, one an error text that looks like a
// formula) and returns a completed task whose summary the analysis package computed from them.
func finishedTask(t *testing.T, n int) (*simtask.Task, analysis.Summary) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "per-request.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := analysis.New(analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for i := 1; i <= n; i++ {
		start := float64(i) * 0.1
		rec := loadgen.Record{RequestID: int64(i), StatusCode: ptr(200), Successful: true, ScheduledAtSeconds: start,
			StartedAtSeconds: start + 0.002, LatencyMs: 100 + float64(i), TTFTMs: ptr(20 + float64(i%7)), TPOTMs: ptr(5.0),
			FirstTokenAtSeconds: ptr(start + 0.03), CompletedAtSeconds: start + 0.1 + float64(i)/1000, InputTokens: 50, OutputTokens: 17}
		if i%10 == 0 {
			rec.StatusCode, rec.Successful, rec.TTFTMs, rec.TPOTMs, rec.FirstTokenAtSeconds = ptr(503), false, nil, nil, nil
			rec.Error = ptr("=HYPERLINK(\"x\") upstream busy")
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		if err := acc.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	s, err := acc.Summary()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(s)
	task := &simtask.Task{ID: "0badcafe", Name: "Chat <b>replay</b>", Status: simtask.StatusCompleted, ModelName: "Qwen/Qwen3-8B",
		TaskDir: dir, Simulation: simtask.Simulation{Backend: "trace-replayer"},
		Result: &simtask.Result{Summary: raw, Warnings: []string{"3 of 103 scheduled requests were due after duration_seconds"}}}
	task.Internal.RecordsPath = path
	return task, s
}

func TestReportIsSelfContainedAndShowsTheSummary(t *testing.T) {
	task, s := finishedTask(t, 200)
	arts, err := simreport.Write(task, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 2 || arts[0].Kind != simreport.KindHTML || arts[1].Kind != simreport.KindCSV {
		t.Fatalf("%+v", arts)
	}
	raw, err := os.ReadFile(arts[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(raw)
	for _, want := range []string{
		"<!DOCTYPE html>", "TTFT CDF", "TPOT histogram", "Latency CDF", "Completion timeline", "Request throughput",
		"Error rate", "Send drift histogram", "Responses by status code",
		"3 of 103 scheduled requests were due after duration_seconds", // the result's warning
		"Chat &lt;b&gt;replay&lt;/b&gt;",                              // names are escaped
		report.Num(s.Latency.P50Ms), report.Num(s.TTFT.P99Ms), report.Num(s.ThroughputRPS), "503",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if got := strings.Count(html, "<svg"); got < 14 {
		t.Errorf("%d charts, want every distribution, timeline, drift and status chart", got)
	}
	if strings.Count(html, "<svg") != strings.Count(html, "</svg>") {
		t.Error("unbalanced svg elements")
	}
	if regexp.MustCompile(`(?i)(https?:|//[a-z]|<script|url\(|<link|<img|@import)`).MatchString(html) {
		t.Errorf("report references something outside itself: %s", regexp.MustCompile(`(?i)(https?:[^"\s]*|<script|url\(|<link|<img|@import)`).FindString(html))
	}
	if strings.Contains(html, "NaN") || strings.Contains(html, "Inf") {
		t.Error("a non-finite number reached the SVG")
	}
	// The 503 bar's height is a tenth of the 200 bar's (20 of 200 requests).
	if !strings.Contains(html, "<title>503: 20</title>") || !strings.Contains(html, "<title>200: 180</title>") {
		t.Error("status bars do not carry their counts")
	}
}

func TestCSVHasEveryRecordAndNeutralisesFormulas(t *testing.T) {
	task, _ := finishedTask(t, 50)
	arts, err := simreport.Write(task, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(arts[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 51 || rows[0][0] != "request_id" || rows[0][10] != "latency_ms" {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	if rows[1][0] != "1" || rows[1][3] != "200" || rows[1][10] != "101" || rows[1][11] != "21" {
		t.Fatalf("row 1 %v", rows[1])
	}
	if rows[10][3] != "503" || !strings.HasPrefix(rows[10][5], "'=") || rows[10][11] != "" {
		t.Fatalf("row 10 %v", rows[10])
	}
}

func TestWriteNeedsASummary(t *testing.T) {
	if _, err := simreport.Write(&simtask.Task{ID: "00000000", TaskDir: t.TempDir()}, time.Now()); err == nil {
		t.Fatal("a task without a result got a report")
	}
}

// TestReportsArePrivate: report.html and per-request.csv are 0600 like everything under the
// data dir, whatever the process's umask.
func TestReportsArePrivate(t *testing.T) {
	task, _ := finishedTask(t, 5)
	arts, err := simreport.Write(task, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arts {
		info, err := os.Stat(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s is %v, want 0600", a.Path, perm)
		}
	}
}
