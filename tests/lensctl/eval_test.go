package lensctl_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/lensctl"
	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/livesummary"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// evalStack is the local stack's ingress in small: simulation-api and evaluation-api sharing
// one store (so one token works for both) behind one URL, with auth required. The workflow
// routes are served by workflowStandIn until the orchestrator's land in evaluation-api.
type evalStack struct {
	*stack
	runs      *evalrun.Repo
	workflows *workflow.Repo
}

const staticExecution = `[{"id":"exec-1","cluster_session_id":"session-1","name":"sim","model":"fake-model","endpoint":"http://127.0.0.1:1/v1","namespace":"local"}]`

func newEvalStack(t *testing.T) *evalStack {
	t.Helper()
	redisURL := os.Getenv("REDIS_URL")
	if redisURL == "" {
		embedded, err := redisstore.StartEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(embedded.Close)
		redisURL = embedded.URL()
	}
	dataDir := t.TempDir()
	env := fntest.Env(t, map[string]string{"LENS_DATA_DIR": dataDir, "LENS_AUTH": "required", "REDIS_URL": redisURL,
		"LENS_SECRET_KEY": secret.NewKey(), "LENS_STATIC_EXECUTIONS": staticExecution})
	serve := func(name string, build fn.Builder) *fn.Server {
		s, err := fn.NewServer(context.Background(), fntest.Config(t, env), name, build)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	sim := serve(simulationapi.Name, func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		f, _, err := simulationapi.New(d, noParsers{})
		return f, err
	})
	eval := serve(evaluationapi.Name, evaluationapi.Build)
	mux := http.NewServeMux()
	mux.Handle("/api/simulation/", sim.Handler)
	mux.Handle("/api/v1/evaluate/workflow-runs", workflowStandIn)
	mux.Handle("/api/v1/evaluate/workflow-runs/", workflowStandIn)
	mux.Handle("GET /api/v1/evaluate/workflow-runs/{id}/events", eval.Handler)
	mux.Handle("GET /api/v1/evaluate/workflow-runs/{id}/artifacts/report-html", eval.Handler)
	mux.Handle("GET /api/v1/evaluate/workflow-runs/wf-watch", eval.Handler)
	mux.Handle("/api/v1/evaluate/", eval.Handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	sealer, _ := secret.FromEnv(env["LENS_SECRET_KEY"])
	return &evalStack{
		stack: &stack{url: srv.URL, token: fntest.Token(t, eval), dataDir: dataDir,
			repo: &simtask.Repo{Store: sim.Deps.Store, DataDir: dataDir}},
		runs:      &evalrun.Repo{Store: eval.Deps.Store, Sealer: sealer, DataDir: dataDir},
		workflows: &workflow.Repo{Store: eval.Deps.Store},
	}
}

func ptr[T any](v T) *T { return &v }

// finishRun plays the benchmark runner's part through the run repo (the writes it makes):
// running (or still running) with progress and a log line, per-request records, then status with metrics and
// the SLA verdict of targets.
func (es *evalStack) finishRun(t *testing.T, id, status string, ttftLimit float64) {
	t.Helper()
	ctx := context.Background()
	if _, err := es.runs.Transition(ctx, id, []string{evalrun.StatusQueued, evalrun.StatusRunning}, evalrun.StatusRunning, state.Fence{}, func(r *evalrun.Run) error {
		r.Phase, r.ProgressPercent = evalrun.Ptr(evalrun.PhaseMatrix(0)), evalrun.Ptr(50.0)
		r.ProgressMessage = evalrun.Ptr("matrix-0: 4 of 8 requests completed")
		live := livesummary.New()
		now := time.Now()
		for range 4 {
			live.Add(livesummary.Observation{Successful: true, TTFTMs: 40, TPOTMs: 10, LatencyMs: 200, OutputTokens: 16}, now)
		}
		summary := live.Snapshot(now)
		r.LiveMetrics = &evalrun.LiveMetrics{Phase: evalrun.PhaseMatrix(0), CompletedRequests: 4, Summary: &summary}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	es.runs.Logf(ctx, id, "benchmarking fake-model")
	if err := os.MkdirAll(es.runs.RunDir(id), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(es.runs.RecordsPath(id))
	if err != nil {
		t.Fatal(err)
	}
	targets := &ttftTargets{limit: ttftLimit}
	b := evalrun.NewBuilder(targets.sla())
	enc := json.NewEncoder(f)
	for i := 1; i <= 8; i++ {
		at := float64(i) * 0.1
		rec := loadgen.Record{RequestID: int64(i), StatusCode: ptr(200), Successful: true, ScheduledAtSeconds: at, StartedAtSeconds: at,
			FirstTokenAtSeconds: ptr(at + 0.04), CompletedAtSeconds: at + 0.2, LatencyMs: 200, TTFTMs: ptr(40.0), TPOTMs: ptr(10.0),
			InputTokens: 64, OutputTokens: 16, Metadata: map[string]any{"phase": "matrix-0", "stage": 0}}
		_ = enc.Encode(rec)
		b.Add(rec, nil)
	}
	f.Close()
	m := b.Metrics(es.runs.RecordsPath(id))
	if _, err := es.runs.Transition(ctx, id, []string{evalrun.StatusRunning}, status, state.Fence{}, func(r *evalrun.Run) error {
		r.ProgressPercent, r.FinishedAt = evalrun.Ptr(100.0), evalrun.Ptr(evalrun.Now())
		if status == evalrun.StatusFailed {
			r.Error = rawjson.Some("the endpoint stopped answering")
			return nil
		}
		r.Metrics, r.SLA = evalrun.JSON(m), evalrun.EvaluateSLA(m, targets.sla())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

type ttftTargets struct{ limit float64 }

func (tt *ttftTargets) sla() *events.SLATargets {
	return &events.SLATargets{TTFTMs: ptr(tt.limit), TTFTPercentile: ptr("p99")}
}

// createRun starts a run through lensctl and returns its id.
func (es *evalStack) createRun(t *testing.T) string {
	t.Helper()
	body := filepath.Join(t.TempDir(), "run.json")
	_ = os.WriteFile(body, []byte(`{"deployment_execution_id":"exec-1","harness":"inference-perf","matrix":[{"isl":64,"osl":16}],
		"concurrency_stages":[{"concurrency":2,"num_requests":8}],"sla_targets":{"ttft_ms":100,"ttft_percentile":"p99"}}`), 0o644)
	r := es.run(t, nil, "eval", "runs", "create", "-f", body, "-o", "json")
	var run map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &run); r.code != 0 || err != nil || run["status"] != "queued" {
		t.Fatalf("create: %+v %v", r, err)
	}
	return run["id"].(string)
}

func TestEvalRunsCreateListGetReportDelete(t *testing.T) {
	es := newEvalStack(t)
	id := es.createRun(t)
	if r := es.run(t, nil, "eval", "runs", "list"); r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "queued") || !strings.Contains(r.stdout, "matrix") {
		t.Fatalf("list: %+v", r)
	}
	if r := es.run(t, nil, "eval", "runs", "delete", id); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "409") {
		t.Fatalf("delete while queued: %+v", r)
	}
	es.finishRun(t, id, evalrun.StatusSucceeded, 100)
	r := es.run(t, nil, "eval", "runs", "get", id)
	if r.code != 0 || !strings.Contains(r.stdout, "succeeded") || !strings.Contains(r.stdout, "throughput_tps") ||
		!strings.Contains(r.stdout, "ttft p99") || !strings.Contains(r.stdout, "met") {
		t.Fatalf("get: %+v", r)
	}
	if r := es.run(t, nil, "eval", "runs", "get", id, "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "status: succeeded") {
		t.Fatalf("get yaml: %+v", r)
	}
	dir := t.TempDir()
	for kind, want := range map[string]string{"report-html": "Benchmark run report: " + id, "per-request-csv": "request_id,session_id", "per-request-jsonl": `"request_id":1`} {
		dest := filepath.Join(dir, kind)
		if r := es.run(t, nil, "eval", "runs", "report", id, "--kind", kind, "--file", dest); r.code != 0 {
			t.Fatalf("report %s: %+v", kind, r)
		}
		raw, _ := os.ReadFile(dest)
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s lacks %q", kind, want)
		}
	}
	if r := es.run(t, nil, "eval", "runs", "delete", id); r.code != 0 || !strings.Contains(r.stdout, "deleted") {
		t.Fatalf("delete: %+v", r)
	}
	if r := es.run(t, nil, "eval", "runs", "get", id); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "404") {
		t.Fatalf("get deleted: %+v", r)
	}
}

func TestEvalRunsWatchExitsByOutcomeAndSLA(t *testing.T) {
	es := newEvalStack(t)
	for name, tc := range map[string]struct {
		status string
		limit  float64 // the run's TTFT p99 is 40 ms
		want   int
	}{
		"succeeded, SLA met":    {evalrun.StatusSucceeded, 100, lensctl.ExitOK},
		"succeeded, SLA missed": {evalrun.StatusSucceeded, 10, lensctl.ExitSLAMissed},
		"failed":                {evalrun.StatusFailed, 100, lensctl.ExitFailed},
	} {
		id := es.createRun(t)
		done := make(chan result, 1)
		go func() { done <- es.run(t, nil, "eval", "runs", "watch", id) }()
		time.Sleep(50 * time.Millisecond) // the watch may connect before or after: both must work
		es.finishRun(t, id, tc.status, tc.limit)
		select {
		case r := <-done:
			if r.code != tc.want || !strings.Contains(r.stderr, "benchmarking fake-model") || !strings.Contains(r.stderr, "matrix-0") {
				t.Errorf("%s: %+v", name, r)
			}
			// The live summary of the running run is shown (TTFT 40 ms within DDSketch's 1 %).
			if !strings.Contains(r.stderr, "TTFT p50 40") && !strings.Contains(r.stderr, "TTFT p50 39") {
				t.Errorf("%s: %+v", name, r)
			}
			if tc.status == evalrun.StatusFailed && !strings.Contains(r.stderr, "the endpoint stopped answering") {
				t.Errorf("a failed watch does not say why: %+v", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: watch did not end", name)
		}
	}
	// A queued run cancelled: cancel answers at once, watch exits 3.
	id := es.createRun(t)
	if r := es.run(t, nil, "eval", "runs", "cancel", id); r.code != 0 || !strings.Contains(r.stdout, "cancelled") {
		t.Fatalf("cancel: %+v", r)
	}
	if r := es.run(t, nil, "eval", "runs", "watch", id); r.code != lensctl.ExitCancelled {
		t.Fatalf("watch cancelled: %+v", r)
	}
}

func TestCompareTwoRunsAndTwoTasks(t *testing.T) {
	es := newEvalStack(t)
	a, b := es.createRun(t), es.createRun(t)
	es.finishRun(t, a, evalrun.StatusSucceeded, 100)
	es.finishRun(t, b, evalrun.StatusSucceeded, 100)
	r := es.run(t, nil, "compare", a, b, "-o", "json")
	var cmp struct {
		Kind    string `json:"kind"`
		Metrics []struct {
			Metric string   `json:"metric"`
			Left   *float64 `json:"left"`
			Ratio  *float64 `json:"ratio"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cmp); r.code != 0 || err != nil || cmp.Kind != "benchmark-run" || len(cmp.Metrics) < 6 {
		t.Fatalf("compare runs: %+v %v", r, err)
	}
	for _, m := range cmp.Metrics {
		if m.Metric == "ttft_p99_ms" && (m.Left == nil || *m.Left != 40 || m.Ratio == nil || *m.Ratio != 1) {
			t.Errorf("ttft p99 row %+v", m)
		}
	}
	x, y := es.seed(t, "left"), es.seed(t, "right")
	es.finish(t, x, simtask.StatusCompleted)
	es.finish(t, y, simtask.StatusCompleted)
	if r := es.run(t, nil, "compare", x, y); r.code != 0 || !strings.Contains(r.stdout, "latency_p50_ms") || !strings.Contains(r.stdout, "B/A") {
		t.Fatalf("compare tasks: %+v", r)
	}
	if r := es.run(t, nil, "compare", x); r.code != lensctl.ExitUsage {
		t.Fatalf("one id: %+v", r)
	}
	if r := es.run(t, nil, "compare", "nope", "nada"); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "neither") {
		t.Fatalf("unknown ids: %+v", r)
	}
}

func TestBackendsScenariosDiscover(t *testing.T) {
	es := newEvalStack(t)
	if r := es.run(t, nil, "backends"); r.code != 0 || !strings.Contains(r.stdout, "trace-replayer") {
		t.Fatalf("backends: %+v", r)
	}
	if r := es.run(t, nil, "scenarios", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"chat"`) {
		t.Fatalf("scenarios: %+v", r)
	}
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-endpoint-key" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"fake-model","object":"model"}]}`))
	}))
	t.Cleanup(models.Close)
	env := map[string]string{"LENS_API": es.url, "LENS_TOKEN": es.token, "HOME": t.TempDir(), "ENDPOINT_KEY": "sk-endpoint-key"}
	r := es.run(t, env, "discover", models.URL+"/v1", "--api-key-env", "ENDPOINT_KEY")
	if r.code != 0 || !strings.Contains(r.stdout, "fake-model") || strings.Contains(r.stdout+r.stderr, "sk-endpoint-key") {
		t.Fatalf("discover: %+v", r)
	}
	if r := es.run(t, env, "discover", models.URL+"/v1", "--api-key-env", "UNSET"); r.code != lensctl.ExitUsage {
		t.Fatalf("discover with an empty key variable: %+v", r)
	}
}

// workflowStandIn answers the workflow routes of spec/evaluation-api.txt with fixed records,
// so the workflow and evaluation commands are exercised over HTTP before the orchestrator's
// routes land in evaluation-api (then the stack routes them to it and this goes).
var workflowStandIn = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	workflowMu.Lock()
	defer workflowMu.Unlock()
	if r.Header.Get("Authorization") == "" {
		http.Error(w, `{"status":401,"title":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	path := strings.TrimPrefix(r.URL.Path, "/api/v1/evaluate/workflow-runs")
	switch {
	case r.Method == "GET" && path == "":
		_, _ = w.Write([]byte(`{"items":[` + workflowJSON + `,{"kind":"workflow","id":"wf-single","name":"single","status":"queued","cases":[]}]}`))
	case r.Method == "GET" && path == "/wf-1":
		_, _ = w.Write([]byte(workflowJSON))
	case r.Method == "GET" && path == "/wf-1/details":
		_, _ = w.Write([]byte(`{"workflow":` + workflowJSON + `,"cases":[{"case":{"id":"guide-1","kind":"guide","status":"succeeded"},
			"evaluation":{"id":"run-guide","status":"succeeded"}}],"report":` + reportJSON + `}`))
	case r.Method == "POST" && (path == "/wf-1/cancel" || path == "/wf-1/retry"):
		_, _ = w.Write([]byte(`{"id":"wf-1","status":"cancelled"}`))
	case r.Method == "DELETE" && path == "/wf-1":
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"status":404,"title":"Not Found","detail":"no workflow"}`))
	}
})

var workflowMu sync.Mutex

const workflowJSON = `{"kind":"workflow","id":"wf-1","name":"Qwen comparison","status":"succeeded",
	"configuration_artifacts":{"cfg-1":"sha256:9eb2d61d"},"cases":[{"id":"guide-1","kind":"guide","status":"succeeded","evaluation_run_id":"run-guide"},
	{"id":"baseline-1","kind":"baseline","status":"succeeded","evaluation_run_id":"run-base"}]}`

const reportJSON = `{"comparison_version":2,"comparisons":[{"workload_id":"chat","guide":"optimized-baseline","baseline_type":"direct-vllm",
	"sla":{"met":false,"checks":{}},"parity":{"valid":false,"reasons":["accelerator count differs: guide 2, baseline 1"]},"delta_percent":{"throughput_tps":12.5,"ttft_ms":-8.1},
	"significance":{"metrics":{"ttft_ms":{"change_percent":-8.4,"change_percent_ci_low":-12.2,"change_percent_ci_high":-4.6,"verdict":"better"},
	"tpot_ms":{"change_percent":1.5,"change_percent_ci_low":-3,"change_percent_ci_high":6,"verdict":"no significant difference"}}},
	"matrix_statistics":{"geometric_mean_ratio":{"throughput_tps":1.125}}},
	{"workload_id":"solo","guide":"baseline-vllm","sla":{"met":true,"checks":{}},"parity":{"valid":false,"reasons":[]}}],
	"topology_comparisons":[{"left_case_id":"guide-1","right_case_id":"guide-2","ratio":{"throughput_tps":1.2}}]}`

func TestWorkflowAndEvaluationCommands(t *testing.T) {
	es := newEvalStack(t)
	if r := es.run(t, nil, "eval", "workflows", "list"); r.code != 0 || !strings.Contains(r.stdout, "wf-1") || !strings.Contains(r.stdout, "wf-single") {
		t.Fatalf("workflows list: %+v", r)
	}
	if r := es.run(t, nil, "eval", "evaluations", "list"); r.code != 0 || !strings.Contains(r.stdout, "wf-1") || strings.Contains(r.stdout, "wf-single") {
		t.Fatalf("evaluations list keeps only multi-configuration workflows: %+v", r)
	}
	if r := es.run(t, nil, "eval", "workflows", "get", "wf-1"); r.code != 0 || !strings.Contains(r.stdout, "baseline-1") {
		t.Fatalf("workflows get: %+v", r)
	}
	r := es.run(t, nil, "eval", "workflows", "details", "wf-1")
	if r.code != 0 || !strings.Contains(r.stdout, "run-guide") || !strings.Contains(r.stdout, "12.5") || !strings.Contains(r.stdout, "1.13") || !strings.Contains(r.stdout, "MISSED") {
		t.Fatalf("workflows details: %+v", r)
	}
	// The guide missed its SLA: evaluations get and compare --evaluation exit 4.
	if r := es.run(t, nil, "eval", "evaluations", "get", "wf-1"); r.code != lensctl.ExitSLAMissed || !strings.Contains(r.stderr, "missed its SLA") {
		t.Fatalf("evaluations get: %+v", r)
	}
	if r := es.run(t, nil, "compare", "--evaluation", "wf-1"); r.code != lensctl.ExitSLAMissed || !strings.Contains(r.stdout, "optimized-baseline") ||
		!strings.Contains(r.stdout, "-8.4 [-12.2, -4.6] better") || !strings.Contains(r.stdout, "no significant difference") ||
		!strings.Contains(r.stdout, "accelerator count differs: guide 2, baseline 1") {
		t.Fatalf("compare --evaluation: %+v", r)
	}
	// A guide compared with no baseline (the "solo" column) has no parity to speak of.
	cmp := es.run(t, nil, "compare", "--evaluation", "wf-1")
	var parityRow string
	for _, line := range strings.Split(cmp.stdout, "\n") {
		if strings.HasPrefix(line, "│ parity") {
			parityRow = line
		}
	}
	if cells := strings.Split(strings.Trim(parityRow, "│ "), "│"); len(cells) != 3 || strings.TrimSpace(cells[2]) != "-" ||
		!strings.HasPrefix(strings.TrimSpace(cells[1]), "false: accelerator count differs") {
		t.Errorf("parity row %q: want the baseline's verdict, then - for the guide alone", parityRow)
	}
	for _, verb := range []string{"cancel", "retry", "delete"} {
		if r := es.run(t, nil, "eval", "workflows", verb, "wf-1"); r.code != 0 {
			t.Fatalf("workflows %s: %+v", verb, r)
		}
	}
	if r := es.run(t, nil, "eval", "workflows", "get", "nope"); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "404") {
		t.Fatalf("unknown workflow: %+v", r)
	}
}

// newWatchedWorkflow stores an evaluation workflow wf-watch (a guide and a baseline, queued) in
// evaluation-api's store; the workflow routes of its id are the real ones.
func (es *evalStack) newWatchedWorkflow(t *testing.T) {
	t.Helper()
	wf := workflow.New(workflow.KindEvaluation, "wf-watch", "queued")
	var cases []*workflow.Case
	for _, id := range []string{"guide-1", "baseline-1"} {
		cases = append(cases, &workflow.Case{ID: id, Status: "queued"})
	}
	wf.SetCases(cases)
	wf.CreatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	if err := es.workflows.Create(context.Background(), wf); err != nil {
		t.Fatal(err)
	}
}

// finishWorkflow plays the orchestrator: the cases finish, then the workflow with a report
// whose comparison met its SLA or not.
func (es *evalStack) finishWorkflow(t *testing.T, status string, slaMet bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := es.workflows.Update(ctx, "wf-watch", func(wf *workflow.Workflow) error {
		wf.Status = "running"
		for _, c := range wf.AllCases() {
			c.Status = status
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := es.workflows.Update(ctx, "wf-watch", func(wf *workflow.Workflow) error {
		wf.Status = status
		if status == "failed" {
			wf.Error = rawjson.Some("case guide-1 failed: the deployment never became ready")
		}
		report, err := json.Marshal(map[string]any{"comparison_version": 2, "comparisons": []any{
			map[string]any{"guide_case_id": "guide-1", "sla": map[string]any{"met": slaMet, "checks": map[string]any{}}}}})
		wf.Report = workflow.ReportJSON(report)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func TestEvalWorkflowsWatchExitsByOutcomeAndSLA(t *testing.T) {
	for name, tc := range map[string]struct {
		status string
		slaMet bool
		want   int
	}{
		"succeeded, SLA met":    {"succeeded", true, lensctl.ExitOK},
		"succeeded, SLA missed": {"succeeded", false, lensctl.ExitSLAMissed},
		"failed":                {"failed", true, lensctl.ExitFailed},
		"cancelled":             {"cancelled", true, lensctl.ExitCancelled},
	} {
		es := newEvalStack(t)
		es.newWatchedWorkflow(t)
		done := make(chan result, 1)
		go func() { done <- es.run(t, nil, "eval", "workflows", "watch", "wf-watch") }()
		time.Sleep(50 * time.Millisecond) // the watch may connect before or after: both must work
		es.finishWorkflow(t, tc.status, tc.slaMet)
		select {
		case r := <-done:
			if r.code != tc.want || !strings.Contains(r.stderr, "case guide-1 "+tc.status) ||
				!strings.Contains(r.stderr, "2 of 2 cases finished") || !strings.Contains(r.stdout, "wf-watch") {
				t.Errorf("%s: %+v", name, r)
			}
			// A workflow's progress is its cases: its lines carry no percentage of its own.
			if strings.Contains(r.stderr, "0.0%") || strings.Contains(r.stderr, tc.status+" 0") {
				t.Errorf("%s: a workflow's line shows a percentage: %q", name, r.stderr)
			}
			if tc.status == "failed" && !strings.Contains(r.stderr, "the deployment never became ready") {
				t.Errorf("a failed watch does not say why: %+v", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: watch did not end", name)
		}
		if name != "succeeded, SLA met" {
			continue
		}
		// The finished evaluation's report downloads as its page.
		file := filepath.Join(t.TempDir(), "report.html")
		if r := es.run(t, nil, "eval", "workflows", "report", "wf-watch", "--file", file); r.code != 0 {
			t.Fatalf("report: %+v", r)
		}
		if page, err := os.ReadFile(file); err != nil || !strings.Contains(string(page), "<!DOCTYPE html") {
			t.Fatalf("report page: %v %.200s", err, page)
		}
	}
}
