package simulationapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/sse/ssetest"
	"github.com/lensfn/lensfn/runtime/state"
)

var (
	watch = ssetest.Watch
	next  = ssetest.Next
)

func TestTaskEventsStreamProgressLogsAndEnd(t *testing.T) {
	h, _, endpoint := taskHarness(t)
	var c created
	call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &c)
	url := h.url + "/api/simulation/tasks/" + c.TaskID + "/events"
	ch := watch(t, url, "")
	if m := next(t, ch); m.Type != "status" || !strings.Contains(m.Data, `"status":"queued"`) || m.ID == "" {
		t.Fatalf("first event %+v", m)
	}
	if m := next(t, ch); m.Type != "log" || !strings.Contains(m.Data, "Queued for trace-replayer") {
		t.Fatalf("creation log line %+v", m)
	}

	// A runner's writes, as the trace-replayer makes them, reach the open stream live.
	repo := &simtask.Repo{Store: h.server.Deps.Store, DataDir: h.dataDir}
	ctx := context.Background()
	if _, err := repo.Transition(ctx, c.TaskID, []string{simtask.StatusQueued}, simtask.StatusRunning, state.Fence{}, func(tk *simtask.Task) error {
		tk.ProgressPercent, tk.ProgressMessage = 42.5, "Simulation running: 17 of 40 requests sent"
		tk.LiveSummary = map[string]any{"sent_requests": 17, "failed_requests": 1}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	running := next(t, ch)
	var data struct {
		Status      string         `json:"status"`
		Percent     float64        `json:"progress_percent"`
		LiveSummary map[string]int `json:"live_summary"`
	}
	if err := json.Unmarshal([]byte(running.Data), &data); err != nil || running.Type != "status" || data.Status != "running" ||
		data.Percent != 42.5 || data.LiveSummary["sent_requests"] != 17 {
		t.Fatalf("%+v %+v %v", running, data, err)
	}
	repo.Logf(ctx, c.TaskID, "replaying %d requests", 40)
	if m := next(t, ch); m.Type != "log" || !strings.Contains(m.Data, "replaying 40 requests") {
		t.Fatalf("%+v", m)
	}
	if _, err := repo.Transition(ctx, c.TaskID, []string{simtask.StatusRunning}, simtask.StatusCompleted, state.Fence{}, func(tk *simtask.Task) error {
		tk.ProgressPercent, tk.ProgressMessage = 100, "Simulation completed"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ch); m.Type != "status" || !strings.Contains(m.Data, `"status":"completed"`) {
		t.Fatalf("%+v", m)
	}
	if m := next(t, ch); m.Type != "end" || !strings.Contains(m.Data, `"status":"completed"`) {
		t.Fatalf("%+v", m)
	}
	if _, open := <-ch; open {
		t.Fatal("the stream stayed open after the end event")
	}

	// Resuming after the running event replays what followed it, then ends at once.
	resumed := watch(t, url, running.ID)
	var types []string
	for m := range resumed {
		types = append(types, m.Type)
	}
	if strings.Join(types, ",") != "log,status,end" {
		t.Fatalf("resumed %v", types)
	}
}

func TestTaskEventsErrors(t *testing.T) {
	h, _, endpoint := taskHarness(t)
	var c created
	call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &c)
	if code := call(t, "GET", h.url+"/api/simulation/tasks/deadbeef/events", "", nil); code != 404 {
		t.Fatalf("unknown task: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, h.url+"/api/simulation/tasks/"+c.TaskID+"/events", nil)
	req.Header.Set("Last-Event-ID", "not-a-stream-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("bad cursor: %d %s", resp.StatusCode, body)
	}
	// Without a token the route is refused like every simulation:read route.
	resp, err = (&http.Client{}).Get(h.url + "/api/simulation/tasks/" + c.TaskID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 401 {
		t.Fatalf("no token: %d %s", resp.StatusCode, body)
	}
}

// TestReportArtifactsOnDemand: a task that finished without report artifacts gets them written
// when they are first asked for, through the artifacts route.
func TestReportArtifactsOnDemand(t *testing.T) {
	h, _, endpoint := taskHarness(t)
	var c created
	call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &c)
	repo := &simtask.Repo{Store: h.server.Deps.Store, DataDir: h.dataDir}
	ctx := context.Background()
	dir := repo.TaskDir(c.TaskID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	records := `{"request_id":1,"status_code":200,"successful":true,"scheduled_at_seconds":0,"started_at_seconds":0.01,"completed_at_seconds":0.5,"latency_ms":490,"ttft_ms":61,"tpot_ms":7,"input_tokens":10,"output_tokens":20}
{"request_id":2,"status_code":429,"successful":false,"error":"rate limited","scheduled_at_seconds":0.2,"started_at_seconds":0.2,"completed_at_seconds":0.25,"latency_ms":50,"input_tokens":10,"output_tokens":0}
`
	path := filepath.Join(dir, "per-request.jsonl")
	if err := os.WriteFile(path, []byte(records), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := `{"total_requests":2,"successful_requests":1,"failed_requests":1,"success_rate":50,"throughput_rps":4,
		"latency":{"count":1,"mean_ms":490,"p50_ms":490,"p90_ms":490,"p95_ms":490,"p99_ms":490,"min_ms":490,"max_ms":490},
		"status_code_breakdown":[{"status_code":200,"count":1,"percentage":50},{"status_code":429,"count":1,"percentage":50}]}`
	if _, err := repo.Transition(ctx, c.TaskID, []string{simtask.StatusQueued}, simtask.StatusCompleted, state.Fence{}, func(tk *simtask.Task) error {
		tk.Internal.RecordsPath = path
		tk.Result = &simtask.Result{Summary: json.RawMessage(summary), Warnings: []string{"a warning for the report"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	resp := get(t, h.url+"/api/simulation/tasks/"+c.TaskID+"/artifacts/report-html")
	html := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{"<svg", "TTFT CDF", "a warning for the report", "<title>429: 1</title>", "<b>490</b><span>latency p50"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, endpointKey) {
		t.Fatal("the endpoint key reached the report")
	}
	resp = get(t, h.url+"/api/simulation/tasks/"+c.TaskID+"/artifacts/per-request-csv")
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "request_id,") || !strings.Contains(body, "\n2,,0,429,false,rate limited,") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// A task still running has no report yet.
	var q created
	call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &q)
	if code := call(t, "GET", h.url+"/api/simulation/tasks/"+q.TaskID+"/artifacts/report-html", "", nil); code != 404 {
		t.Fatalf("queued task report: %d", code)
	}
}
