package evaluationapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/sse"
	"github.com/lensfn/lensfn/runtime/sse/ssetest"
	"github.com/lensfn/lensfn/runtime/state"
)

var (
	watch = ssetest.Watch
	next  = ssetest.Next
)

func decode(t *testing.T, m sse.Message) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(m.Data), &v); err != nil {
		t.Fatalf("%s: %v", m.Data, err)
	}
	return v
}

// TestRunEventsStreamStatusProgressLogsAndEnd plays the runner's part through the run repo
// (the same writes benchmark-runner makes) while a client follows the stream over HTTP.
func TestRunEventsStreamStatusProgressLogsAndEnd(t *testing.T) {
	h := start(t)
	var run map[string]any
	call(t, "POST", h.url+"/runs", matrixRun, &run)
	id := run["id"].(string)
	url := h.url + "/runs/" + id + "/events"
	ch := watch(t, url, "")

	// What the API wrote at create: the queued status, then the "Queued" log line.
	first := next(t, ch)
	if first.Type != "status" || first.ID == "" || decode(t, first)["status"] != "queued" {
		t.Fatalf("first %+v", first)
	}
	if m := next(t, ch); m.Type != "log" || !strings.Contains(decode(t, m)["line"].(string), "Queued") {
		t.Fatalf("second %+v", m)
	}

	if got := openStreams(t, h); got != 1 {
		t.Fatalf("lens_evaluation_run_event_streams_open %v while one stream is open", got)
	}
	ctx := context.Background()
	if _, err := h.runs.Transition(ctx, id, []string{evalrun.StatusQueued}, evalrun.StatusRunning, state.Fence{}, func(r *evalrun.Run) error {
		r.Phase = evalrun.Ptr(evalrun.PhaseMatrix(0))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	m := next(t, ch)
	if d := decode(t, m); m.Type != "status" || d["status"] != "running" || d["phase"] != "matrix-0" {
		t.Fatalf("running %+v", m)
	}
	resumeAfter := m.ID
	if _, err := h.runs.Patch(ctx, id, state.Fence{}, func(r *evalrun.Run) error {
		r.ProgressPercent, r.ProgressMessage = evalrun.Ptr(50.0), evalrun.Ptr("matrix-0: 4 of 8 requests completed")
		r.LiveMetrics = &evalrun.LiveMetrics{CompletedRequests: 4, PlannedRequests: 8}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	m = next(t, ch)
	d := decode(t, m)
	live, _ := d["live_metrics"].(map[string]any)
	if m.Type != "status" || d["progress_percent"] != 50.0 || live["completed_requests"] != 4.0 {
		t.Fatalf("progress %+v", m)
	}
	h.runs.Logf(ctx, id, "request to http://x used Authorization: Bearer sk-live-secret")
	if m := next(t, ch); m.Type != "log" || strings.Contains(m.Data, "sk-live-secret") {
		t.Fatalf("log line %+v (secrets must be redacted)", m)
	}
	if _, err := h.runs.Transition(ctx, id, []string{evalrun.StatusRunning}, evalrun.StatusSucceeded, state.Fence{}, func(r *evalrun.Run) error {
		r.ProgressPercent, r.SLA = evalrun.Ptr(100.0), &events.SLAVerdict{Met: evalrun.Ptr(false)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ch); m.Type != "status" || decode(t, m)["status"] != "succeeded" {
		t.Fatalf("final status %+v", m)
	}
	end := next(t, ch)
	if d := decode(t, end); end.Type != "end" || d["status"] != "succeeded" || d["sla"].(map[string]any)["met"] != false {
		t.Fatalf("end %+v", end)
	}
	if _, open := <-ch; open {
		t.Fatal("the stream stayed open after end")
	}
	if got := openStreams(t, h); got != 0 {
		t.Fatalf("%v streams open after the stream ended", got)
	}

	// Resuming after the running event replays exactly what came after it.
	var types []string
	for m := range watch(t, url, resumeAfter) {
		types = append(types, m.Type)
	}
	if got := strings.Join(types, ","); got != "status,log,status,end" {
		t.Fatalf("resumed stream %s", got)
	}
}

func TestRunEventsErrors(t *testing.T) {
	h := start(t)
	if code := call(t, "GET", h.url+"/runs/nope/events", "", nil); code != 404 {
		t.Fatalf("unknown run: %d", code)
	}
	var run map[string]any
	call(t, "POST", h.url+"/runs", matrixRun, &run)
	req, _ := http.NewRequest("GET", h.url+"/runs/"+run["id"].(string)+"/events", nil)
	req.Header.Set("Last-Event-ID", "not-a-stream-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("bad cursor: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if code := call(t, "GET", h.url+"/runs/"+run["id"].(string)+"/events?cursor=1", "", nil); code != 422 {
		t.Fatalf("undeclared query parameter: %d", code)
	}
}

// openStreams reads lens_evaluation_run_event_streams_open from the function's registry.
func openStreams(t *testing.T, h *harness) float64 {
	t.Helper()
	families, err := h.deps.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "lens_evaluation_run_event_streams_open" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no lens_evaluation_run_event_streams_open")
	return 0
}
