package lensctl_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/simtask"
)

// fits fails the test when a line of out is wider than width columns.
func fits(t *testing.T, what, out string, width int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width {
			t.Errorf("%s: a line of %d columns (more than %d):\n%s", what, n, width, out)
			return
		}
	}
}

// longDecimals is a number printed with five decimals or more, or in exponent form (a cell of
// its own, not a piece of an id).
var longDecimals = regexp.MustCompile(`\d\.\d{5,}|(^|[\s│])-?\d(\.\d+)?e[+-]\d+`)

// TestTablesRoundNumbersJSONKeepsThem: tables show numbers rounded for people, -o json the API's
// full precision, and every table fits 100 columns (stdout is no terminal here).
func TestTablesRoundNumbersJSONKeepsThem(t *testing.T) {
	es := newEvalStack(t)
	a, b := es.createRun(t), es.createRun(t)
	es.finishRun(t, a, evalrun.StatusSucceeded, 100)
	es.finishRun(t, b, evalrun.StatusSucceeded, 100)
	r := es.run(t, nil, "eval", "runs", "get", a, "-o", "json")
	var run struct {
		Metrics map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &run); r.code != 0 || err != nil {
		t.Fatalf("%+v %v", r, err)
	}
	// 8 requests in 0.9 s: the API's 8.889 stays whole in JSON, the table shows 8.89.
	rps, _ := run.Metrics["throughput_rps"].(float64)
	if rps != 8.889 {
		t.Fatalf("json changed throughput_rps: %v", run.Metrics["throughput_rps"])
	}
	for name, argv := range map[string][]string{
		"runs get":         {"eval", "runs", "get", a},
		"runs list":        {"eval", "runs", "list"},
		"compare":          {"compare", a, b},
		"workflow details": {"eval", "workflows", "details", "wf-1"},
		"compare report":   {"compare", "--evaluation", "wf-1"},
	} {
		r := es.run(t, nil, argv...)
		if r.code != 0 && r.code != 4 {
			t.Fatalf("%s: %+v", name, r)
		}
		if longDecimals.MatchString(r.stdout) {
			t.Errorf("%s: numbers are not rounded:\n%s", name, r.stdout)
		}
		fits(t, name, r.stdout, 100)
	}
	if r := es.run(t, nil, "eval", "runs", "get", a); !strings.Contains(r.stdout, "8.89 ") || strings.Contains(r.stdout, "8.889") {
		t.Errorf("throughput_rps %v is not shown as 8.89:\n%s", rps, r.stdout)
	}
	// A long task name and a failure's message wrap inside their columns.
	id := es.seed(t, strings.Repeat("a long nightly replay name ", 4))
	es.finish(t, id, simtask.StatusCompleted)
	r = es.run(t, nil, "tasks", "list")
	fits(t, "tasks list", r.stdout, 100)
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "a long nightly") {
		t.Fatalf("tasks list: %+v", r)
	}
}

// TestDatasetsTimelineShowsItsShape: the timeline's sparkline is drawn from bins[].request_count.
func TestDatasetsTimelineShowsItsShape(t *testing.T) {
	st := newStack(t)
	// 40 arrivals in the first second, 4 in the last: a tall bar, then short ones.
	var trace strings.Builder
	for i := range 40 {
		trace.WriteString(strconv.Itoa(i*20) + " x\n")
	}
	for i := range 4 {
		trace.WriteString(strconv.Itoa(9000+i*200) + " y\n")
	}
	placeTrace(t, st, trace.String())
	r := st.run(t, nil, "datasets", "timeline", "mooncake-conversation", "--bins", "50")
	if r.code != 0 || !strings.Contains(r.stdout, "44") || !strings.Contains(r.stdout, "█") || !strings.ContainsAny(r.stdout, "▁▂▃") {
		t.Fatalf("timeline: %+v", r)
	}
	fits(t, "timeline", r.stdout, 100)
	r = st.run(t, nil, "datasets", "timeline", "mooncake-conversation", "--bins", "50", "-o", "json")
	var tl struct {
		Bins []struct {
			RequestCount int `json:"request_count"`
		} `json:"bins"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil || len(tl.Bins) != 50 {
		t.Fatalf("timeline json: %+v %v", r, err)
	}
	// An unknown dataset's error lists the known ones.
	if r := st.run(t, nil, "datasets", "timeline", "nope"); r.code == 0 || !strings.Contains(r.stderr, "the known datasets are") ||
		!strings.Contains(r.stderr, "mooncake-conversation") {
		t.Fatalf("unknown dataset: %+v", r)
	}
}

// placeTrace puts mooncake-conversation's file in the stack's data dir, as a download would.
func placeTrace(t *testing.T, st *stack, trace string) {
	t.Helper()
	dir := filepath.Join(st.dataDir, "datasets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conversation_trace.jsonl"), []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTaskCreateWatchEndsWithTheResult: tasks create --watch follows the new task and ends with
// its result's numbers, not only its status.
func TestTaskCreateWatchEndsWithTheResult(t *testing.T) {
	st := newStack(t)
	placeTrace(t, st, "0 a\n500 b\n")
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model"}]}`))
	}))
	t.Cleanup(models.Close)
	body := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(body, []byte(`{"name":"watched","scenario":"chat","endpoint_mode":"external","endpoint_url":"`+models.URL+
		`/v1","model_name":"Qwen/Qwen3-8B","trace_dataset":"mooncake-conversation"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- st.run(t, nil, "tasks", "create", "-f", body, "--watch") }()
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var out struct {
			Tasks []simtask.Task `json:"tasks"`
		}
		if r := st.run(t, nil, "tasks", "list", "-o", "json"); json.Unmarshal([]byte(r.stdout), &out) == nil && len(out.Tasks) == 1 {
			id = out.Tasks[0].ID
		}
	}
	if id == "" {
		t.Fatal("the task was not created")
	}
	st.finish(t, id, simtask.StatusCompleted)
	select {
	case r := <-done:
		if r.code != 0 || !strings.Contains(r.stderr, "created task "+id) || !strings.Contains(r.stdout, "completed") ||
			!strings.Contains(r.stdout, "total_requests") || !strings.Contains(r.stdout, "latency p50/p99 ms") || !strings.Contains(r.stdout, "300 / 300") {
			t.Fatalf("%+v", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end")
	}
}
