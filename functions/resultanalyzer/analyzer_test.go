package resultanalyzer_test

import (
	"time"

	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/resultanalyzer"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

func newAnalyzer(t *testing.T) (*resultanalyzer.Analyzer, *simtask.Repo, fn.Deps) {
	t.Helper()
	deps := fntest.Deps(t, resultanalyzer.Name, fntest.Env(t, nil))
	repo := &simtask.Repo{Store: deps.Store, DataDir: deps.Config.DataDir}
	var s resultanalyzer.Settings
	if err := deps.Config.ReadSettings(&s); err != nil || s.LeaseTTL != 15*time.Second {
		t.Fatalf("settings %+v, %v", s, err)
	}
	return resultanalyzer.New(deps, repo, s), repo, deps
}

func ptr[T any](v T) *T { return &v }

// replayedTask stores a running task in its analyzing phase with the given records.
func replayedTask(t *testing.T, repo *simtask.Repo, message string, records []loadgen.Record, extraLines ...string) string {
	t.Helper()
	id := simtask.NewID()
	dir := repo.TaskDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range records {
		raw, _ := json.Marshal(r)
		lines = append(lines, string(raw))
	}
	lines = append(lines, extraLines...)
	path := filepath.Join(dir, "per-request.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := &simtask.Task{ID: id, Name: "t", Scenario: "chat", Status: simtask.StatusQueued, EndpointURL: "http://x/v1",
		ModelName: "m", TaskDir: dir, Simulation: simtask.Simulation{Backend: "trace-replayer", DurationSeconds: 2,
			BackendOptions: map[string]any{}}, CreatedAt: simtask.Now(), ConfigurationIDs: []string{}}
	if err := repo.Create(context.Background(), task, ""); err != nil {
		t.Fatal(err)
	}
	_, err := repo.Transition(context.Background(), id, []string{simtask.StatusQueued}, simtask.StatusRunning, state.Fence{}, func(t *simtask.Task) error {
		t.Internal.Phase, t.Internal.RecordsPath, t.Internal.ReplayMessage = "analyzing", path, message
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func record(id int64, status int, ttft, latency float64) loadgen.Record {
	r := loadgen.Record{RequestID: id, Successful: status/100 == 2, ScheduledAtSeconds: float64(id) * 0.1,
		StartedAtSeconds: float64(id) * 0.1, CompletedAtSeconds: float64(id)*0.1 + latency/1000, LatencyMs: latency,
		InputTokens: 100, OutputTokens: 11, Metadata: map[string]any{"line": id}}
	if status != 0 {
		r.StatusCode = ptr(status)
	}
	if r.Successful {
		r.TTFTMs, r.TPOTMs = ptr(ttft), ptr((latency-ttft)/10)
	} else {
		r.Error = ptr(fmt.Sprintf("HTTP %d", status))
	}
	return r
}

func TestAnalyzeCompletesTheTaskWithSummaryAndArtifacts(t *testing.T) {
	a, repo, _ := newAnalyzer(t)
	recs := []loadgen.Record{record(1, 200, 20, 120), record(2, 200, 30, 130), record(3, 500, 0, 5), record(4, 200, 40, 140)}
	id := replayedTask(t, repo, "every scheduled request was sent", recs)
	ctx := context.Background()
	if err := a.Analyze(ctx, id); err != nil {
		t.Fatal(err)
	}
	task, err := repo.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != simtask.StatusCompleted || task.ProgressPercent != 100 || task.CompletedAt == nil || task.Result == nil ||
		task.ArtifactURI == nil || *task.ArtifactURI != "artifact://simulation/"+id {
		t.Fatalf("%+v", task)
	}
	var s struct {
		Total       int     `json:"total_requests"`
		Successful  int     `json:"successful_requests"`
		SuccessRate float64 `json:"success_rate"`
		TTFT        struct {
			P50 float64 `json:"p50_ms"`
		} `json:"ttft"`
	}
	if err := json.Unmarshal(task.Result.Summary, &s); err != nil {
		t.Fatal(err)
	}
	if s.Total != 4 || s.Successful != 3 || s.SuccessRate != 75 || s.TTFT.P50 != 30 {
		t.Fatalf("summary %+v", s)
	}
	if len(task.Result.PerRequest) != 4 || !strings.Contains(string(task.Result.PerRequest[0]), `"line":1`) {
		t.Fatalf("inline records %s", task.Result.PerRequest)
	}
	kinds := []string{}
	for _, art := range task.Result.Artifacts {
		if _, err := os.Stat(art.Path); err != nil {
			t.Errorf("artifact %s missing: %v", art.Kind, err)
		}
		kinds = append(kinds, art.Kind)
	}
	if strings.Join(kinds, ",") != "summary-json,per-request-jsonl,report-html,per-request-csv" {
		t.Fatalf("artifacts %v", kinds)
	}
	// The report shows the summary just computed; the CSV has a row per record.
	html, _ := os.ReadFile(task.Result.Artifacts[2].Path)
	if !strings.Contains(string(html), "<svg") || !strings.Contains(string(html), "<b>75 %</b><span>success rate") {
		t.Fatalf("report does not show the summary")
	}
	csvRows, _ := os.ReadFile(task.Result.Artifacts[3].Path)
	if n := strings.Count(string(csvRows), "\n"); n != 5 {
		t.Fatalf("csv has %d lines, want a header and 4 records", n)
	}
	// A redelivered event finds the task finished and changes nothing.
	before, _ := repo.Store.Get(ctx, simtask.Kind, id)
	if err := a.Analyze(ctx, id); err != nil {
		t.Fatal(err)
	}
	after, _ := repo.Store.Get(ctx, simtask.Kind, id)
	if before.Version != after.Version {
		t.Fatal("a duplicate analysis wrote the task again")
	}
}

func TestStoppedAndBrokenRuns(t *testing.T) {
	a, repo, _ := newAnalyzer(t)
	ctx := context.Background()
	stopped := replayedTask(t, repo, "stopped by request", []loadgen.Record{record(1, 200, 20, 120)})
	broken := replayedTask(t, repo, "every scheduled request was sent", []loadgen.Record{record(1, 200, 20, 120)}, `{"request_id": "x"`)
	timedOut := replayedTask(t, repo, "the trace timeout of 1s was reached", []loadgen.Record{record(1, 200, 20, 120)})
	for _, id := range []string{stopped, broken, timedOut} {
		if err := a.Analyze(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if task, _ := repo.Get(ctx, stopped); task.Status != simtask.StatusCancelled || task.Result == nil {
		t.Fatalf("stopped: %+v", task)
	}
	if task, _ := repo.Get(ctx, broken); task.Status != simtask.StatusFailed || task.ErrorMessage == nil ||
		!strings.Contains(*task.ErrorMessage, "line 2") {
		t.Fatalf("broken: %s %v", task.Status, task.ErrorMessage)
	}
	if task, _ := repo.Get(ctx, timedOut); task.Status != simtask.StatusFailed || !strings.Contains(*task.ErrorMessage, "timeout") ||
		task.Result == nil {
		t.Fatalf("timed out: %+v", task)
	}
}

// A run the duration cut short completes, but its summary keeps scheduled and sent apart and its
// warnings and log say how many requests were never released and why.
func TestATruncatedRunSaysWhatWasNeverReleased(t *testing.T) {
	a, repo, _ := newAnalyzer(t)
	recs := []loadgen.Record{record(1, 200, 20, 120), record(2, 200, 30, 130)}
	id := replayedTask(t, repo, "the run's duration of 2s ended the replay: 2 of 9 scheduled requests sent", recs)
	ctx := context.Background()
	_, err := repo.Patch(ctx, id, state.Fence{}, func(t *simtask.Task) error {
		t.Internal.ReplayOutcome = simtask.StatusCompleted
		t.Internal.Replay = &simtask.ReplayCounts{Scheduled: 9, Sent: 2,
			NotSent: map[string]int64{simtask.NotSentAfterDuration: 3, simtask.NotSentWaiting: 4}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Analyze(ctx, id); err != nil {
		t.Fatal(err)
	}
	task, err := repo.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Total       int            `json:"total_requests"`
		Scheduled   *int           `json:"scheduled_requests"`
		Sent        int            `json:"sent_requests"`
		NotReleased *int           `json:"not_released_requests"`
		ByReason    map[string]int `json:"not_released_by_reason"`
	}
	if err := json.Unmarshal(task.Result.Summary, &s); err != nil {
		t.Fatal(err)
	}
	if task.Status != simtask.StatusCompleted || s.Total != 2 || s.Sent != 2 || s.Scheduled == nil || *s.Scheduled != 9 ||
		s.NotReleased == nil || *s.NotReleased != 7 || s.ByReason["after_duration"] != 3 || s.ByReason["waiting_on_unsent"] != 4 {
		t.Fatalf("%s: summary %s", task.Status, task.Result.Summary)
	}
	want := "7 of 9 scheduled requests were never released: 3 were due after the run's duration of 2s; 4 waited on requests"
	if len(task.Result.Warnings) != 1 || !strings.HasPrefix(task.Result.Warnings[0], want) {
		t.Fatalf("warnings %q", task.Result.Warnings)
	}
}

// TestPartialRecordsOfALostRunner: the records a crashed replayer left, its last line cut in
// half, are analysed as a partial result; the task fails with the summary and the message.
func TestPartialRecordsOfALostRunner(t *testing.T) {
	a, repo, _ := newAnalyzer(t)
	ctx := context.Background()
	lost := "The runner was lost: pod-1 stopped renewing its lease on this task (the process crashed or was killed); the records it wrote are analysed as a partial result"
	half, _ := json.Marshal(record(3, 200, 20, 120))
	id := replayedTask(t, repo, lost, []loadgen.Record{record(1, 200, 20, 120), record(2, 200, 30, 130)})
	task, _ := repo.Get(ctx, id)
	f, err := os.OpenFile(task.Internal.RecordsPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write(half[:len(half)/2])
	f.Close()
	if err := a.Analyze(ctx, id); err != nil {
		t.Fatal(err)
	}
	task, _ = repo.Get(ctx, id)
	if task.Status != simtask.StatusFailed || task.Result == nil || task.ErrorMessage == nil || *task.ErrorMessage != lost {
		t.Fatalf("%s %v %+v", task.Status, task.ErrorMessage, task.Result)
	}
	var s struct {
		Total int `json:"total_requests"`
	}
	if err := json.Unmarshal(task.Result.Summary, &s); err != nil || s.Total != 2 {
		t.Fatalf("summary %s %v", task.Result.Summary, err)
	}
}

// The run: a replay that sent all 162 requests, 159 of them refused with 400 for the
// context length, completes but says so in its warnings, with the flag to change.
func TestARunThatMostlyFailedSaysWhyInItsWarnings(t *testing.T) {
	a, repo, _ := newAnalyzer(t)
	var recs []loadgen.Record
	for i := int64(1); i <= 162; i++ {
		r := record(i, 200, 20, 120)
		if i > 3 {
			r = record(i, 400, 0, 5)
			r.Error = ptr(fmt.Sprintf("HTTP 400: This model's maximum context length is 1024 tokens. However, you requested %d tokens", 1500+i))
		}
		recs = append(recs, r)
	}
	id := replayedTask(t, repo, "every scheduled request was sent", recs)
	ctx := context.Background()
	if err := a.Analyze(ctx, id); err != nil {
		t.Fatal(err)
	}
	task, err := repo.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(task.Result.Warnings, "\n")
	if task.Status != simtask.StatusCompleted || !strings.Contains(w, "only 3 of 162 requests succeeded") ||
		!strings.Contains(w, "159 of 159 failed requests share one cause, HTTP 400") || !strings.Contains(w, "--max-model-len") {
		t.Fatalf("%s, warnings:\n%s", task.Status, w)
	}
}

// A run stopped after 38 of its 162 scheduled requests reports the share it sent, not 100.
func TestAStoppedRunReportsTheProgressItMade(t *testing.T) {
	a, repo, _ := newAnalyzer(t)
	var recs []loadgen.Record
	for i := int64(1); i <= 38; i++ {
		recs = append(recs, record(i, 200, 20, 120))
	}
	id := replayedTask(t, repo, "stopped by request", recs)
	task := analyzeReplayed(t, a, repo, id, simtask.StatusCancelled,
		simtask.ReplayCounts{Scheduled: 162, Sent: 38, NotSent: map[string]int64{simtask.NotSentRunEnded: 124}})
	if task.Status != simtask.StatusCancelled || task.ProgressPercent != 23.5 {
		t.Fatalf("%s at %v%%", task.Status, task.ProgressPercent)
	}
}

// analyzeReplayed records the replay's outcome and counts on a replayed task, analyses it and
// returns the finished task.
func analyzeReplayed(t *testing.T, a *resultanalyzer.Analyzer, repo *simtask.Repo, id, outcome string, counts simtask.ReplayCounts) *simtask.Task {
	t.Helper()
	ctx := context.Background()
	_, err := repo.Patch(ctx, id, state.Fence{}, func(t *simtask.Task) error {
		t.Internal.ReplayOutcome, t.Internal.Replay = outcome, &counts
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Analyze(ctx, id); err != nil {
		t.Fatal(err)
	}
	task, err := repo.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestALostRunnersProgressIsWhatItSent: a replayer that died after sending 2 of the 82 requests
// its live summary announced leaves a failed task at 2.4 %, not the 99 % of the hand-off.
func TestALostRunnersProgressIsWhatItSent(t *testing.T) {
	a, repo, _ := newAnalyzer(t)
	ctx := context.Background()
	id := replayedTask(t, repo, "The runner was lost: pod-1 stopped renewing its lease", []loadgen.Record{record(1, 200, 20, 120), record(2, 200, 30, 130)})
	if _, err := repo.Patch(ctx, id, state.Fence{}, func(t *simtask.Task) error {
		t.ProgressPercent, t.LiveSummary = 99, map[string]any{"scheduled_requests": 82, "sent_requests": 6}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Analyze(ctx, id); err != nil {
		t.Fatal(err)
	}
	task, _ := repo.Get(ctx, id)
	if task.Status != simtask.StatusFailed || task.ProgressPercent != 2.4 {
		t.Fatalf("%s at %v %%, want failed at 2.4 %% (2 of 82 sent)", task.Status, task.ProgressPercent)
	}
}

// A bad lease TTL stops the function at start, naming the variable.
func TestBuildRefusesABadLeaseTTL(t *testing.T) {
	for value, want := range map[string]string{"0s": "LENS_LEASE_TTL must be a positive duration", "soon": `LENS_LEASE_TTL="soon" is not a duration such as 2s`} {
		deps := fntest.Deps(t, resultanalyzer.Name, fntest.Env(t, map[string]string{"LENS_LEASE_TTL": value}))
		if _, err := resultanalyzer.Build(context.Background(), deps); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LENS_LEASE_TTL=%s: err = %v, want %q", value, err, want)
		}
	}
}
