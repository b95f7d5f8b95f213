package evaluationapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/sse"
	"github.com/lensfn/lensfn/runtime/sse/ssetest"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
)

type wfHarness struct {
	*harness
	inv       *inventory.Repo
	workflows *workflow.Repo
	session   string
	cfg, pd   string
}

func startWorkflows(t *testing.T) *wfHarness {
	h := start(t)
	inv := &inventory.Repo{Store: h.deps.Store, Sealer: h.runs.Sealer}
	_, s, err := inv.CreateCluster(context.Background(), inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	w := &wfHarness{harness: h, inv: inv, workflows: &workflow.Repo{Store: h.deps.Store}, session: s.ID}
	w.cfg = w.configuration(t, "optimized-baseline", `{"model":{"name":"m"},"decode":{"replicas":2}}`)
	w.pd = w.configuration(t, "pd-disaggregation", `{"model":{"name":"m"},"prefill":{"replicas":1},"decode":{"replicas":2}}`)
	return w
}

func (w *wfHarness) configuration(t *testing.T, provider, content string) string {
	c, err := w.inv.CreateConfiguration(context.Background(), inventory.ConfigurationSpec{Name: "cfg", SchemaVersion: inventory.ConfigurationSchemaV1,
		Type: inventory.ConfigurationGuide, Format: inventory.ConfigurationFormat, ProviderRef: provider, Content: json.RawMessage(content)})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func (w *wfHarness) body(plans string) string {
	return `{"cluster_session_id":"` + w.session + `","benchmark_plans":[` + plans + `]}`
}

func (w *wfHarness) count(t *testing.T) int {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if code := call(t, "GET", w.url+"/workflow-runs", "", &list); code != 200 {
		t.Fatalf("list: %d", code)
	}
	return len(list.Items)
}

// orchestrate plays the orchestrator's part of a cancel: cancelling cases become cancelled,
// then the workflow (as the lease holder would, within a second).
func (w *wfHarness) orchestrate(t *testing.T, id string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			_, _ = w.workflows.Update(ctx, id, func(wf *workflow.Workflow) error {
				changed := false
				for _, c := range wf.AllCases() {
					if c.Status == workflow.CaseCancelling {
						c.Status = workflow.CaseCancelled
						changed = true
					}
				}
				if wf.Status == workflow.StatusCancelling {
					wf.Status = workflow.StatusCancelled
					changed = true
				}
				if !changed {
					return workflow.ErrUnchanged
				}
				return nil
			})
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

func TestCreateEvaluationOverHTTP(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	code := call(t, "POST", w.url+"/evaluations", w.body(`{"id":"candidate","configuration_artifact_id":"`+w.cfg+`","baseline_types":["direct-vllm","kubernetes-service"]}`), &wf)
	if code != 202 || wf["status"] != "queued" || wf["kind"] != "workflow" || wf["deployment_ownership"] != "evaluation" || wf["report"] != nil {
		t.Fatalf("%d %v", code, wf)
	}
	cases := wf["cases"].([]any)
	if len(cases) != 3 || cases[0].(map[string]any)["id"] != "guide-1" || cases[1].(map[string]any)["baseline_type"] != "kubernetes-service" {
		t.Fatalf("cases %v", cases)
	}
	if strings.Contains(mustJSON(wf), "_internal") {
		t.Fatal("internals shown")
	}
	id := wf["id"].(string)
	var got map[string]any
	if code := call(t, "GET", w.url+"/workflow-runs/"+id, "", &got); code != 200 || got["id"] != id {
		t.Fatalf("get %d", code)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	call(t, "GET", w.url+"/workflow-runs", "", &list)
	item := list.Items[0]["cases"].([]any)[0].(map[string]any)
	conf := item["configuration"].(map[string]any)
	if conf["guide"] != "optimized-baseline" || conf["replicas"] != 2.0 || item["deployment_configuration"] != nil {
		t.Fatalf("list case %v", item)
	}
	if code := call(t, "GET", w.url+"/workflow-runs/nope", "", nil); code != 404 {
		t.Fatalf("unknown workflow %d", code)
	}
}

// Refusals answer problem+json and save nothing: the P/D budget rule's 409 included.
func TestCreateEvaluationRefusalsSaveNothing(t *testing.T) {
	w := startWorkflows(t)
	for name, c := range map[string]struct {
		body string
		code int
	}{
		"pd budget":          {w.body(`{"configuration_artifact_id":"` + w.pd + `","baseline_parameters":{"direct-vllm":{"tensor_parallel_size":2}}}`), 409},
		"unknown artifact":   {w.body(`{"configuration_artifact_id":"00000000-0000-4000-8000-000000000009"}`), 404},
		"unknown field":      {w.body(`{"configuration_artifact_id":"` + w.cfg + `","x":1}`), 422},
		"replicas range":     {w.body(`{"configuration_artifact_id":"` + w.cfg + `","baseline_parameters":{"direct-vllm":{"replicas":40}}}`), 422},
		"ks of pd":           {w.body(`{"configuration_artifact_id":"` + w.pd + `","baseline_types":["kubernetes-service"]}`), 409},
		"unknown session":    {`{"cluster_session_id":"00000000-0000-4000-8000-000000000009","benchmark_plans":[{"configuration_artifact_id":"` + w.cfg + `"}]}`, 404},
		"not json object":    {`[1]`, 422},
		"simple no model":    {`{"cluster_session_id":"` + w.session + `"}`, 422},
		"simple bad replica": {`{"model":"m","cluster_session_id":"` + w.session + `","replicas":0}`, 422},
	} {
		path := "/evaluations"
		if strings.HasPrefix(name, "simple") {
			path = "/workflow-runs"
		}
		req, _ := http.NewRequest("POST", w.url+path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want %d problem+json", name, resp.StatusCode, resp.Header.Get("Content-Type"), c.code)
		}
	}
	if n := w.count(t); n != 0 {
		t.Fatalf("refused requests saved %d workflows", n)
	}
	// P/D with an exact budget is accepted: 1P2D at TP 1 gives three replicas.
	var wf map[string]any
	if code := call(t, "POST", w.url+"/evaluations", w.body(`{"configuration_artifact_id":"`+w.pd+`"}`), &wf); code != 202 {
		t.Fatalf("pd evaluation %d", code)
	}
	b := wf["cases"].([]any)[1].(map[string]any)
	decode := b["deployment_configuration"].(map[string]any)["content"].(map[string]any)["decode"].(map[string]any)
	if decode["replicas"] != 3.0 {
		t.Fatalf("budget-matched baseline %v", decode)
	}
}

func TestSimpleWorkflowOverHTTP(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	code := call(t, "POST", w.url+"/workflow-runs", `{"model":"m","cluster_session_id":"`+w.session+`","replicas":2,"workload":"sanity_random.yaml"}`, &wf)
	if code != 202 || wf["status"] != "deploying" || wf["deployment_run_id"] == nil || wf["cases"] != nil || wf["workload"] != "sanity_random.yaml" {
		t.Fatalf("%d %v", code, wf)
	}
	stored, _, err := w.workflows.Get(context.Background(), wf["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := w.inv.Configuration(context.Background(), stored.AllCases()[0].ConfigurationArtifactID.Get())
	if err != nil || cfg.ProviderRef != "optimized-baseline" || !strings.Contains(string(cfg.Content), `"replicas":2`) {
		t.Fatalf("simple configuration %+v %v", cfg, err)
	}
	// A simple workflow has no cases to retry.
	if code := call(t, "POST", w.url+"/workflow-runs/"+stored.ID+"/retry", "", nil); code != 409 {
		t.Fatalf("retry of a deploying simple workflow %d", code)
	}
}

func TestCancelRetryDeleteOverHTTP(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	call(t, "POST", w.url+"/evaluations", w.body(`{"configuration_artifact_id":"`+w.cfg+`","baseline_types":["kubernetes-service","direct-vllm"]}`), &wf)
	id := wf["id"].(string)
	if code := call(t, "DELETE", w.url+"/workflow-runs/"+id, "", nil); code != 409 {
		t.Fatalf("delete of an active workflow %d", code)
	}
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/retry", "", nil); code != 409 {
		t.Fatalf("retry of a queued workflow %d", code)
	}
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/cases/nope/cancel", "", nil); code != 404 {
		t.Fatalf("cancel of an unknown case %d", code)
	}
	w.orchestrate(t, id)
	// Cancelling the guide takes its kubernetes-service baseline with it; the independent
	// baseline stays queued.
	var res evaluationapi.CancelResponse
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/cases/guide-1/cancel", "", &res); code != 200 || res.ID != "guide-1" || res.Status != "cancelled" {
		t.Fatalf("case cancel %d %+v", code, res)
	}
	stored, _, _ := w.workflows.Get(context.Background(), id)
	got := []string{}
	for _, c := range stored.AllCases() {
		got = append(got, c.ID+"="+c.Status)
	}
	if strings.Join(got, ",") != "guide-1=cancelled,baseline-1=cancelled,baseline-2=queued" || stored.Status != "queued" {
		t.Fatalf("after case cancel: %v, workflow %s", got, stored.Status)
	}
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/cancel", "", &res); code != 200 || res.Status != "cancelled" {
		t.Fatalf("workflow cancel %d %+v", code, res)
	}
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/cancel", "", &res); code != 200 || res.Status != "cancelled" {
		t.Fatalf("repeated cancel %d %+v", code, res)
	}
	var retried map[string]any
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/retry", "", &retried); code != 202 || retried["status"] != "queued" {
		t.Fatalf("retry %d %v", code, retried)
	}
	for _, c := range retried["cases"].([]any) {
		if m := c.(map[string]any); m["status"] != "queued" || m["cancel_requested"] != nil {
			t.Fatalf("retried case %v", m)
		}
	}
	// Finished again, with a child run: delete removes the workflow and the run.
	runID := workflow.RunID(id, "guide-1", 1)
	run := evalrun.New(runID)
	run.Status = evalrun.StatusSucceeded
	if err := w.runs.Create(context.Background(), run, ""); err != nil {
		t.Fatal(err)
	}
	_, err := w.workflows.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		wf.Status = "running"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.workflows.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		wf.Status = "succeeded"
		wf.AddRunID(runID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A run a workflow owns is not deleted on its own.
	run.EvaluationWorkflow, run.EvaluationCase = &id, evalrun.Ptr("guide-1")
	if _, err := w.runs.Patch(context.Background(), runID, state.Fence{}, func(r *evalrun.Run) error {
		r.EvaluationWorkflow, r.EvaluationCase = &id, evalrun.Ptr("guide-1")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if code := call(t, "DELETE", w.url+"/runs/"+runID, "", nil); code != 409 {
		t.Fatalf("standalone delete of a workflow's run %d", code)
	}
	if code := call(t, "DELETE", w.url+"/workflow-runs/"+id, "", nil); code != 204 {
		t.Fatalf("delete %d", code)
	}
	if _, err := w.runs.Load(context.Background(), runID); err != state.ErrNotFound && !strings.Contains(errString(err), "not found") {
		t.Fatalf("child run kept: %v", err)
	}
	if code := call(t, "GET", w.url+"/workflow-runs/"+id, "", nil); code != 404 {
		t.Fatalf("deleted workflow answers %d", code)
	}
}

// A cancel whose cleanup failed answers 409 with the cleanup error (cancellation_error), and the
// workflow stays cancelling; cancelling again asks for the cleanup once more.
func TestCancelWithAFailedCleanupIs409(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	call(t, "POST", w.url+"/evaluations", w.body(`{"configuration_artifact_id":"`+w.cfg+`","include_baseline":false}`), &wf)
	id := wf["id"].(string)
	_, err := w.workflows.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		wf.Status = "running"
		c := wf.Case("guide-1")
		c.Status = "deploying"
		c.ExecutionID = rawjson.Some("exec-9")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The orchestrator's part: the deployer refused the cleanup.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_, _ = w.workflows.Update(ctx, id, func(wf *workflow.Workflow) error {
				c := wf.Case("guide-1")
				if wf.Status != "cancelling" || c.CleanupStatus.Get() == "failed" {
					return workflow.ErrUnchanged
				}
				c.CleanupStatus = rawjson.Some("failed")
				c.CleanupError = rawjson.Some("the cluster refused")
				wf.CancellationError = rawjson.Some("the cluster refused")
				return nil
			})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var p map[string]any
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/cancel", "", &p); code != 409 || !strings.Contains(mustJSON(p), "the cluster refused") {
		t.Fatalf("cancel with a failed cleanup: %d %v", code, p)
	}
	stored, _, _ := w.workflows.Get(context.Background(), id)
	if stored.Status != "cancelling" || stored.Case("guide-1").Status != "cancelling" {
		t.Fatalf("after the failed cleanup: %s %s", stored.Status, stored.Case("guide-1").Status)
	}
	cancel()
	// A retried cancel clears the error and asks for the cleanup again (cleanup_status retry);
	// this time the orchestrator's part succeeds.
	retried := make(chan bool, 1)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() {
		for ctx2.Err() == nil {
			_, _ = w.workflows.Update(ctx2, id, func(wf *workflow.Workflow) error {
				c := wf.Case("guide-1")
				if wf.Status != "cancelling" || c.CleanupStatus.Get() != "retry" {
					return workflow.ErrUnchanged
				}
				retried <- !wf.CancellationError.Present()
				c.CleanupStatus = rawjson.Some("cleaned")
				c.Status = "cancelled"
				wf.Status = "cancelled"
				return nil
			})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var res evaluationapi.CancelResponse
	if code := call(t, "POST", w.url+"/workflow-runs/"+id+"/cancel", "", &res); code != 200 || res.Status != "cancelled" {
		t.Fatalf("retried cancel %d %+v", code, res)
	}
	if cleared := <-retried; !cleared {
		t.Fatal("the retried cancel kept the old cancellation_error")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// succeedWithAStaleReport finishes both cases (the guide's TTFT half the baseline's) and the
// workflow, with a stored report of comparison_version 1 (stale).
func (w *wfHarness) succeedWithAStaleReport(t *testing.T, id string) {
	t.Helper()
	_, err := w.workflows.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		wf.Status = "running"
		for i, c := range wf.AllCases() {
			c.Status = "succeeded"
			c.Metrics = json.RawMessage(mustJSON(map[string]any{"ttft_ms": float64(10 * (i + 1)), "throughput_tps": 100.0}))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.workflows.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		wf.Status = "succeeded"
		wf.Report = workflow.ReportJSON(mustJSON(map[string]any{"comparison_version": 1, "comparisons": []any{}}))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// expectFreshReportSaved fails the test unless the stored report is comparison_version 2.
func (w *wfHarness) expectFreshReportSaved(t *testing.T, id string) {
	t.Helper()
	stored, _, _ := w.workflows.Get(context.Background(), id)
	var report struct {
		Version int `json:"comparison_version"`
	}
	if workflow.Decode(stored.Report.Raw(), &report); report.Version != 2 {
		t.Fatal("the fresh report was not saved")
	}
}

// Details expand each case and rebuild a stale stored report (comparison_version 1 here),
// saving the fresh one.
func TestDetailsRegenerateAStaleReport(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	call(t, "POST", w.url+"/evaluations", w.body(`{"configuration_artifact_id":"`+w.cfg+`"}`), &wf)
	id := wf["id"].(string)
	w.succeedWithAStaleReport(t, id)
	var details struct {
		Workflow map[string]any   `json:"workflow"`
		Cases    []map[string]any `json:"cases"`
		Report   struct {
			Version     int `json:"comparison_version"`
			Comparisons []struct {
				Delta map[string]float64 `json:"delta_percent"`
			} `json:"comparisons"`
		} `json:"report"`
	}
	if code := call(t, "GET", w.url+"/workflow-runs/"+id+"/details", "", &details); code != 200 {
		t.Fatalf("details %d", code)
	}
	if details.Report.Version != 2 || len(details.Report.Comparisons) != 1 || details.Report.Comparisons[0].Delta["ttft_ms"] != -50 {
		t.Fatalf("report %+v", details.Report)
	}
	if len(details.Cases) != 2 || details.Cases[0]["case"].(map[string]any)["id"] != "guide-1" {
		t.Fatalf("cases %v", details.Cases)
	}
	w.expectFreshReportSaved(t, id)
}

// Fields a newer build stored on a workflow and on its cases, and request fields Lensfn echoes
// without reading (benchmark_source), survive read-modify-writes through the API (the details
// read rebuilds and saves a stale report) and are answered as stored.
func TestUnknownStoredFieldsSurviveTheAPI(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	body := `{"cluster_session_id":"` + w.session + `","benchmark_source":{},"benchmark_plans":[{"configuration_artifact_id":"` + w.cfg + `"}]}`
	if code := call(t, "POST", w.url+"/evaluations", body, &wf); code != 202 {
		t.Fatalf("create %d", code)
	}
	id := wf["id"].(string)
	ctx := context.Background()
	rec, err := w.deps.Store.Get(ctx, workflow.Kind, id)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.Unmarshal(rec.Doc, &doc)
	doc["future_top"] = map[string]any{"nested": []any{1, "two", nil}}
	doc["cases"].([]any)[0].(map[string]any)["future_case"] = "kept"
	rec.Doc, _ = json.Marshal(doc)
	if _, err := w.deps.Store.Update(ctx, rec, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.succeedWithAStaleReport(t, id)
	if code := call(t, "GET", w.url+"/workflow-runs/"+id+"/details", "", nil); code != 200 {
		t.Fatalf("details %d", code)
	}
	w.expectFreshReportSaved(t, id)
	rec, _ = w.deps.Store.Get(ctx, workflow.Kind, id)
	for _, want := range []string{`"future_top":{"nested":[1,"two",null]}`, `"future_case":"kept"`, `"benchmark_source":{}`} {
		if !strings.Contains(string(rec.Doc), want) {
			t.Fatalf("stored record lost %s: %s", want, rec.Doc)
		}
	}
	var got struct {
		FutureTop json.RawMessage              `json:"future_top"`
		Source    json.RawMessage              `json:"benchmark_source"`
		Cases     []map[string]json.RawMessage `json:"cases"`
	}
	if code := call(t, "GET", w.url+"/workflow-runs/"+id, "", &got); code != 200 || string(got.FutureTop) != `{"nested":[1,"two",null]}` ||
		string(got.Source) != `{}` || len(got.Cases) == 0 || string(got.Cases[0]["future_case"]) != `"kept"` {
		t.Fatalf("answered %d %+v", code, got)
	}
}

func TestEvaluationRequestedEventCreatesOneWorkflowPerKey(t *testing.T) {
	w := startWorkflows(t)
	data := `{"idempotency_key":"nightly","cluster_session_id":"` + w.session + `","benchmark_plans":[{"configuration_artifact_id":"` + w.cfg + `"}]}`
	for _, eventID := range []string{"e-1", "e-1", "e-2"} {
		if code := postTypedEvent(t, w.url, "dev.lensfn.evaluation.requested.v1", eventID, data); code/100 != 2 {
			t.Fatalf("event %s: %d", eventID, code)
		}
	}
	if n := w.count(t); n != 1 {
		t.Fatalf("%d workflows from one key", n)
	}
	bad := `{"idempotency_key":"k2","cluster_session_id":"` + w.session + `","benchmark_plans":[{"configuration_artifact_id":"` + w.pd + `","baseline_parameters":{"direct-vllm":{"tensor_parallel_size":2}}}]}`
	if code := postTypedEvent(t, w.url, "dev.lensfn.evaluation.requested.v1", "e-3", bad); code != 400 {
		t.Fatalf("refused evaluation event %d, want 400 (never redelivered)", code)
	}
	if n := w.count(t); n != 1 {
		t.Fatalf("a refused event saved a workflow: %d", n)
	}
}

func postTypedEvent(t *testing.T, base, eventType, id, data string) int {
	t.Helper()
	return postCloudEvent(t, base, data, map[string]string{"Ce-Id": id, "Ce-Source": "/lensfn/user", "Ce-Type": eventType})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A standalone cancel of a run a workflow case owns is carried out as that case's cancel.
func TestCancelOfACaseRunIsTheCaseCancel(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	call(t, "POST", w.url+"/evaluations", w.body(`{"configuration_artifact_id":"`+w.cfg+`"}`), &wf)
	id := wf["id"].(string)
	runID := workflow.RunID(id, "guide-1", 0)
	run := evalrun.New(runID)
	run.EvaluationWorkflow, run.EvaluationCase = &id, evalrun.Ptr("guide-1")
	if err := w.runs.Create(context.Background(), run, ""); err != nil {
		t.Fatal(err)
	}
	_, err := w.workflows.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		wf.Status = "running"
		c := wf.Case("guide-1")
		c.Status = "benchmarking"
		c.EvaluationRunID = rawjson.Some(runID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.orchestrate(t, id)
	var res evaluationapi.CancelResponse
	if code := call(t, "POST", w.url+"/runs/"+runID+"/cancel", "", &res); code != 200 || res.ID != runID || res.Status != "cancelled" {
		t.Fatalf("cancel %d %+v", code, res)
	}
	stored, _, _ := w.workflows.Get(context.Background(), id)
	if c := stored.Case("guide-1"); !c.CancelRequested.Get() || c.Status != "cancelled" || stored.Case("baseline-1").Status != "queued" {
		t.Fatalf("the case was not cancelled: %s", mustJSON(stored))
	}
}

// The report-html artifact is 404 until the evaluation has a report, then the comparison report
// as a locked-down self-contained page, regenerated first when the stored one is stale.
func TestWorkflowReportHTMLOverHTTP(t *testing.T) {
	w := startWorkflows(t)
	var wf map[string]any
	call(t, "POST", w.url+"/evaluations", w.body(`{"configuration_artifact_id":"`+w.cfg+`"}`), &wf)
	id := wf["id"].(string)
	get := func() (*http.Response, string) {
		resp, err := http.Get(w.url + "/workflow-runs/" + id + "/artifacts/report-html")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	if resp, body := get(); resp.StatusCode != 404 || !strings.Contains(body, "no comparison report yet") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("before the report: %d %s", resp.StatusCode, body)
	}
	if resp, _ := http.Get(w.url + "/workflow-runs/nope/artifacts/report-html"); resp.StatusCode != 404 {
		t.Fatalf("unknown workflow: %d", resp.StatusCode)
	}
	w.succeedWithAStaleReport(t, id)
	resp, html := get()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `attachment; filename="`+id+`-report.html"`) ||
		resp.Header.Get("Content-Security-Policy") != "default-src 'none'; style-src 'unsafe-inline'; img-src data:" {
		t.Fatalf("report: %d %v", resp.StatusCode, resp.Header)
	}
	// The stale (version 1, no comparisons) report was rebuilt: the page shows the guide against
	// its baseline, with TTFT's -50 % delta.
	if !strings.Contains(html, "<!DOCTYPE html") || !strings.Contains(html, "TTFT") || !strings.Contains(html, "-50") {
		t.Fatalf("page:\n%s", html)
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Fatal("the page loads or runs something")
	}
	w.expectFreshReportSaved(t, id)
}

// The orchestrator's writes (through the workflow repo) reach a client following the stream over
// HTTP: the workflow's status, each case's, a log line per change, and a closing end event with
// the SLA verdict; Last-Event-ID resumes after an event.
func TestWorkflowEventsStreamStatusCasesLogsAndEnd(t *testing.T) {
	w := startWorkflows(t)
	if code := call(t, "GET", w.url+"/workflow-runs/nope/events", "", nil); code != 404 {
		t.Fatalf("unknown workflow: %d", code)
	}
	var wf map[string]any
	call(t, "POST", w.url+"/evaluations", w.body(`{"configuration_artifact_id":"`+w.cfg+`"}`), &wf)
	id := wf["id"].(string)
	url := w.url + "/workflow-runs/" + id + "/events"
	ch := ssetest.Watch(t, url, "")
	expect := func(typ string, check func(map[string]any) bool) sse.Message {
		t.Helper()
		m := ssetest.Next(t, ch)
		if d := decode(t, m); m.Type != typ || (m.ID == "") != (typ == "end") || !check(d) {
			t.Fatalf("want a %s event, got %+v", typ, m)
		}
		return m
	}
	line := func(want string) func(map[string]any) bool {
		return func(d map[string]any) bool { s, _ := d["line"].(string); return strings.Contains(s, want) }
	}
	// What the API wrote at create: the two cases, then the queued workflow.
	for _, c := range []string{"guide-1", "baseline"} {
		expect("log", line("case "+c))
		expect("case", func(d map[string]any) bool { return strings.HasPrefix(d["case_id"].(string), c) && d["status"] != "" })
	}
	expect("log", line("created: queued"))
	expect("status", func(d map[string]any) bool { return d["status"] == "queued" })

	ctx := context.Background()
	if _, err := w.workflows.Update(ctx, id, func(wf *workflow.Workflow) error {
		wf.Status = "running"
		wf.AllCases()[0].Status = "failed"
		wf.AllCases()[0].Error = rawjson.Some("boom")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	expect("log", line("case guide-1"))
	expect("case", func(d map[string]any) bool {
		return d["case_id"] == "guide-1" && d["status"] == "failed" && d["error"] == "boom"
	})
	expect("log", line("queued -> running"))
	running := expect("status", func(d map[string]any) bool { return d["status"] == "running" })

	// A write that moves no status adds nothing; the terminal one ends the stream.
	if _, err := w.workflows.Update(ctx, id, func(wf *workflow.Workflow) error { wf.Name = rawjson.Some("renamed"); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.workflows.Update(ctx, id, func(wf *workflow.Workflow) error {
		wf.Status = "failed"
		wf.Error = rawjson.Some("case guide-1 failed: boom")
		wf.Report = workflow.ReportJSON(mustJSON(map[string]any{"comparison_version": 2, "comparisons": []any{
			map[string]any{"guide_case_id": "guide-1", "sla": map[string]any{"met": true, "checks": map[string]any{}}},
			map[string]any{"guide_case_id": "guide-1", "sla": map[string]any{"met": false, "checks": map[string]any{}}}}}))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	expect("log", line("running -> failed"))
	final := expect("status", func(d map[string]any) bool {
		return d["status"] == "failed" && d["error"] == "case guide-1 failed: boom"
	})
	expect("end", func(d map[string]any) bool {
		return d["status"] == "failed" && d["error"] == "case guide-1 failed: boom" && d["report_ready"] == true && d["sla_met"] == false
	})
	if _, open := <-ch; open {
		t.Fatal("the stream stayed open after end")
	}

	var types []string
	for m := range ssetest.Watch(t, url, running.ID) {
		types = append(types, m.Type)
	}
	if got := strings.Join(types, ","); got != "log,status,end" {
		t.Fatalf("resumed stream %s", got)
	}
	// Resumed past the final status, the stream ends at once.
	started := time.Now()
	if m := ssetest.Next(t, ssetest.Watch(t, url+"?lastEventId="+final.ID, "")); m.Type != "end" || time.Since(started) > time.Second {
		t.Fatalf("resumed after the end: %+v after %s", m, time.Since(started))
	}
}

// Workflows carry the id of the token that created them, and every case's benchmark block
// shows the defaults that apply (the evaluation's repetitions among them), not only the keys
// sent.
func TestWorkflowsCarryTheirOwnerAndTheAppliedDefaults(t *testing.T) {
	w := startWorkflows(t)
	writer := fntest.Token(t, w.server, auth.EvaluateRunWrite, auth.EvaluateRunRead)
	tok, err := w.deps.Tokens.Verify(context.Background(), writer)
	if err != nil {
		t.Fatal(err)
	}
	post := func(path, body string) map[string]any { return postAs(t, writer, w.url+path, body) }
	body := `{"cluster_session_id":"` + w.session + `","repetitions":3,"benchmark_plans":[{"configuration_artifact_id":"` + w.cfg +
		`","baseline_types":["direct-vllm"],"benchmark":{"matrix":[{"isl":64,"osl":8}]}}]}`
	wf := post("/evaluations", body)
	simple := post("/workflow-runs", `{"model":"m","cluster_session_id":"`+w.session+`","repetitions":2}`)
	for _, created := range []map[string]any{wf, simple} {
		var got map[string]any
		if code := call(t, "GET", w.url+"/workflow-runs/"+created["id"].(string), "", &got); code != 200 || got["owner_user_id"] != tok.ID ||
			created["owner_user_id"] != tok.ID {
			t.Errorf("owner_user_id %v (created %v), want the token's id %s", got["owner_user_id"], created["owner_user_id"], tok.ID)
		}
	}
	if simple["repetitions"] != 2.0 {
		t.Errorf("simple workflow repetitions %v", simple["repetitions"])
	}
	for _, c := range wf["cases"].([]any) {
		b := c.(map[string]any)["benchmark"].(map[string]any)
		stages, _ := b["concurrency_stages"].([]any)
		if b["harness"] != "inference-perf" || b["parallelism"] != 1.0 || b["warmup_requests"] != 2.0 || b["harness_memory_gib"] != 8.0 ||
			b["repetitions"] != 3.0 || len(stages) != 4 || b["wait_timeout_seconds"] != nil {
			t.Errorf("case %v benchmark %v", c.(map[string]any)["id"], b)
		}
		if _, ok := b["wait_timeout_seconds"]; !ok {
			t.Errorf("the benchmark block lacks wait_timeout_seconds (null: automatic): %v", b)
		}
	}
	var bad map[string]any
	if code := call(t, "POST", w.url+"/evaluations", strings.Replace(body, `"repetitions":3`, `"repetitions":21`, 1), &bad); code != 422 ||
		!strings.Contains(mustJSON(bad), "repetitions") {
		t.Errorf("21 repetitions: %d %v", code, bad)
	}
	// The intervals' level: 0.95 unless the evaluation names one from 0.8 to 0.999.
	if wf["confidence"] != 0.95 {
		t.Errorf("default confidence %v", wf["confidence"])
	}
	if strict := post("/evaluations", strings.Replace(body, `"repetitions":3`, `"repetitions":3,"confidence":0.99`, 1)); strict["confidence"] != 0.99 {
		t.Errorf("confidence 0.99 stored as %v", strict["confidence"])
	}
	for _, level := range []string{"0.5", "1", "0.9999", `"high"`} {
		bad = nil
		code := call(t, "POST", w.url+"/evaluations", strings.Replace(body, `"repetitions":3`, `"repetitions":3,"confidence":`+level, 1), &bad)
		if code != 422 || !strings.Contains(mustJSON(bad), "confidence") {
			t.Errorf("confidence %s: %d %v", level, code, bad)
		}
	}
}
