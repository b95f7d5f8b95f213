package workfloworchestrator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/functions/workfloworchestrator"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// world stands in for the deployer and the benchmark runner: it answers the orchestrator's
// events the way they do, through the orchestrator's own handlers, so the test drives the
// whole event protocol. Knobs make it misbehave.
type world struct {
	t        *testing.T
	deps     fn.Deps
	inv      *inventory.Repo
	runs     *evalrun.Repo
	session  string
	mu       sync.Mutex
	f        *fn.Function // the orchestrator instance answers go to
	seen     []cloudevent.Event
	holdRuns bool // leave runs running (a cancel must stop them)
	// failCleanup makes cleanups fail while set.
	failCleanup bool
	// ttft gives each case's run metrics, by workflow case id.
	ttft      map[string]float64
	deployed  map[string]bool // live executions
	cleanups  int
	changed   chan struct{}
	dropReady bool // lose deployment.ready events (the sweep must recover)
	// keepUse leaves each run's use of its deployment held after the run ended (as a use
	// re-taken after the end, or a runner that died between its end and its release, leaves it).
	keepUse bool
	// answering counts the world's goroutines still answering an event (a late answer to a
	// resent request can come after the test saw the workflow finish); the test's cleanup
	// waits for them before the store closes.
	answering sync.WaitGroup
}

func newWorld(t *testing.T) (*world, map[string]string) {
	w := &world{t: t, ttft: map[string]float64{}, deployed: map[string]bool{}, changed: make(chan struct{}, 1000)}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e := cloudevent.Event{ID: r.Header.Get("Ce-Id"), Type: r.Header.Get("Ce-Type"), Data: body}
		w.mu.Lock()
		w.seen = append(w.seen, e)
		w.mu.Unlock()
		rw.WriteHeader(http.StatusAccepted)
		w.answering.Add(1)
		go func() { defer w.answering.Done(); w.answer(e) }()
	}))
	t.Cleanup(srv.Close)
	env := fntest.Env(t, map[string]string{"K_SINK": srv.URL, "LENS_SECRET_KEY": secret.NewKey()})
	w.deps = fntest.Deps(t, workfloworchestrator.Name, env)
	t.Cleanup(w.answering.Wait) // before the store closes (cleanups run last first)
	sealer, _ := secret.FromEnv(env["LENS_SECRET_KEY"])
	w.inv = &inventory.Repo{Store: w.deps.Store, Sealer: sealer}
	w.runs = &evalrun.Repo{Store: w.deps.Store, Sealer: sealer, DataDir: w.deps.Config.DataDir}
	_, s, err := w.inv.CreateCluster(context.Background(), inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	w.session = s.ID
	return w, env
}

// orchestrator builds an orchestrator instance (a new one is a restarted process: it shares
// nothing with the last but the store).
func (w *world) orchestrator(instance string, sweep time.Duration) *fn.Function {
	d := w.deps
	d.Config.InstanceID = instance
	d.Metrics = fntest.Deps(w.t, "orchestrator-"+instance, map[string]string{"LENS_DATA_DIR": w.t.TempDir()}).Metrics
	sealer, _ := secret.FromEnv(fntest.Env(w.t, nil)["LENS_SECRET_KEY"])
	_ = sealer
	f := workfloworchestrator.New(d, workfloworchestrator.Settings{SweepInterval: sweep, ResendAfter: 300 * time.Millisecond}, w.inv.Sealer).Function()
	w.mu.Lock()
	w.f = f
	w.mu.Unlock()
	return f
}

func (w *world) deliver(eventType string, data any) {
	raw, _ := json.Marshal(data)
	w.mu.Lock()
	f := w.f
	w.mu.Unlock()
	if err := f.Events[eventType](context.Background(), cloudevent.Event{ID: evalrun.NewID(), Type: eventType, Data: raw}); err != nil {
		w.t.Logf("%s handler: %v", eventType, err)
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *world) answer(e cloudevent.Event) {
	ctx := context.Background()
	switch e.Type {
	case events.TypeDeploymentRequested:
		var d events.DeploymentRequested
		_ = json.Unmarshal(e.Data, &d)
		cfg, err := w.inv.Configuration(ctx, d.ConfigurationID)
		if err != nil {
			w.deliver(events.TypeDeploymentFailed, events.DeploymentFailed{ExecutionID: d.ExecutionID, CaseRef: d.CaseRef, Operation: "deploy", Error: err.Error()})
			return
		}
		var content struct {
			Model struct {
				Name string `json:"name"`
			} `json:"model"`
		}
		_ = json.Unmarshal(cfg.Content, &content)
		ep := "http://127.0.0.1:1/" + d.ExecutionID + "/v1"
		baseline := ""
		if cfg.ProviderRef == "optimized-baseline" {
			baseline = "http://127.0.0.1:1/" + d.ExecutionID + "/balanced/v1"
		}
		_ = w.inv.PutExecution(ctx, inventory.Execution{ID: d.ExecutionID, ClusterSessionID: d.ClusterSessionID, Name: d.CaseRef,
			Model: content.Model.Name, Endpoint: ep, Ownership: inventory.OwnershipEvaluation, Status: "ready", BaselineURL: baseline,
			ConfigurationID: cfg.ID, ProviderRef: cfg.ProviderRef}, "")
		w.mu.Lock()
		w.deployed[d.ExecutionID] = true
		drop := w.dropReady
		w.mu.Unlock()
		if drop {
			return
		}
		w.deliver(events.TypeDeploymentReady, events.DeploymentReady{ExecutionID: d.ExecutionID, ConfigurationID: cfg.ID, CaseRef: d.CaseRef,
			Provider: "local", ProviderRef: cfg.ProviderRef, Endpoint: ep, BaselineURL: baseline, Model: content.Model.Name, ReplicaEndpoints: []string{}})
	case events.TypeDeploymentCleanupRequested:
		var d events.DeploymentCleanupRequested
		_ = json.Unmarshal(e.Data, &d)
		w.mu.Lock()
		fail := w.failCleanup
		w.mu.Unlock()
		if fail {
			w.deliver(events.TypeDeploymentFailed, events.DeploymentFailed{ExecutionID: d.ExecutionID, CaseRef: d.CaseRef, Operation: "cleanup", Error: "the cluster refused"})
			return
		}
		if err := w.inv.DeleteExecution(ctx, d.ExecutionID); err != nil && problem.CodeOf(err) != problem.CodeNotFound {
			w.deliver(events.TypeDeploymentFailed, events.DeploymentFailed{ExecutionID: d.ExecutionID, CaseRef: d.CaseRef, Operation: "cleanup", Error: err.Error()})
			return
		}
		w.mu.Lock()
		delete(w.deployed, d.ExecutionID)
		w.cleanups++
		w.mu.Unlock()
		w.deliver(events.TypeDeploymentCleaned, events.DeploymentCleaned(d))
	case events.TypeRunQueued:
		var d events.RunQueued
		_ = json.Unmarshal(e.Data, &d)
		w.runRun(d.RunID)
	}
}

// runRun plays the benchmark runner: running at once; then succeeded with metrics unless runs
// are held; a held run that was asked to cancel ends cancelled.
func (w *world) runRun(id string) {
	ctx := context.Background()
	w.mu.Lock()
	hold := w.holdRuns
	w.mu.Unlock()
	run, err := w.runs.Transition(ctx, id, []string{evalrun.StatusQueued}, evalrun.StatusRunning, state.Fence{}, nil)
	if err != nil {
		return
	}
	w.mu.Lock()
	ttft := w.ttft[evalrun.Str(run.EvaluationCase)]
	w.mu.Unlock()
	if hold {
		w.answering.Add(1)
		go func() {
			defer w.answering.Done()
			for range 200 {
				time.Sleep(20 * time.Millisecond)
				cur, err := w.runs.Load(ctx, id)
				if err != nil {
					return
				}
				if cur.Internal.CancelRequested {
					w.finishRun(id, evalrun.StatusCancelled, nil)
					return
				}
			}
		}()
		return
	}
	w.finishRun(id, evalrun.StatusSucceeded, map[string]any{"ttft_ms": ttft, "throughput_tps": 100.0, "prefix_cache_hit_rate": 0.5})
}

// finishRun ends a run the way the benchmark runner's finish does: its use of the deployment
// released, then its terminal status, then run.finished.
func (w *world) finishRun(id, status string, metrics map[string]any) {
	ctx := context.Background()
	cur, err := w.runs.Load(ctx, id)
	if err != nil {
		return
	}
	exec := evalrun.Str(cur.DeploymentExecutionID)
	_ = w.inv.ReleaseUse(ctx, exec, id)
	_, err = w.runs.Transition(ctx, id, []string{evalrun.StatusRunning, evalrun.StatusCancelling}, status, state.Fence{}, func(r *evalrun.Run) error {
		if metrics != nil {
			r.Metrics = evalrun.JSON(metrics)
		}
		r.FinishedAt = evalrun.Ptr(evalrun.Now())
		return nil
	})
	if err != nil {
		return
	}
	w.mu.Lock()
	keep := w.keepUse
	w.mu.Unlock()
	if keep {
		_ = w.inv.AcquireUse(ctx, exec, id)
	}
	w.deliver(events.TypeRunFinished, events.RunFinished{RunID: id, Status: status})
}

// waitRun waits for a run to reach status.
func (w *world) waitRun(id, status string) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if run, err := w.runs.Load(context.Background(), id); err == nil && run.Status == status {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("run %s never got %s", id, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *world) count(eventType string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.seen {
		if e.Type == eventType {
			n++
		}
	}
	return n
}

// ids returns the distinct event ids of the events of eventType sent so far.
func (w *world) ids(eventType string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.seen {
		if e.Type == eventType && !slices.Contains(out, e.ID) {
			out = append(out, e.ID)
		}
	}
	return out
}

func (w *world) live() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.deployed)
}

// waitFor polls the workflow until ok holds.
func (w *world) waitFor(id string, what string, ok func(*workflow.Workflow) bool) *workflow.Workflow {
	w.t.Helper()
	repo := &workflow.Repo{Store: w.deps.Store}
	deadline := time.Now().Add(15 * time.Second)
	for {
		wf, _, err := repo.Get(context.Background(), id)
		if err == nil && ok(wf) {
			return wf
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(wf, "", " ")
			w.t.Fatalf("workflow never got %s: %s", what, b)
		}
		select {
		case <-w.changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (w *world) configuration(provider, content string) string {
	c, err := w.inv.CreateConfiguration(context.Background(), inventory.ConfigurationSpec{Name: "cfg", SchemaVersion: inventory.ConfigurationSchemaV1,
		Type: inventory.ConfigurationGuide, Format: inventory.ConfigurationFormat, ProviderRef: provider, Content: json.RawMessage(content)})
	if err != nil {
		w.t.Fatal(err)
	}
	return c.ID
}

func (w *world) evaluation(body string) string {
	w.t.Helper()
	req, raw, err := workflow.ParseEvaluation([]byte(body))
	if err != nil {
		w.t.Fatal(err)
	}
	if err := workflow.ValidateEvaluation(req); err != nil {
		w.t.Fatal(err)
	}
	wf, err := workflow.NewEvaluation(context.Background(), evalrun.NewID(), req, raw, w.inv.Configuration)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := (&workflow.Repo{Store: w.deps.Store}).Create(context.Background(), wf); err != nil {
		w.t.Fatal(err)
	}
	return wf.ID
}

// startGuideAndBaseline creates an evaluation of one optimized-baseline plan (a guide and its
// direct-vllm baseline) and wakes the orchestrator.
func (w *world) startGuideAndBaseline() string {
	cfg := w.configuration("optimized-baseline", optimized)
	id := w.evaluation(`{"cluster_session_id":"` + w.session + `","benchmark_plans":[{"configuration_artifact_id":"` + cfg + `"}]}`)
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	return id
}

const optimized = `{"model":{"name":"m"},"decode":{"replicas":2}}`

func statuses(wf *workflow.Workflow) []string {
	var out []string
	for _, c := range wf.AllCases() {
		out = append(out, c.Status)
	}
	return out
}

// A two-case evaluation runs its guide, then its baseline, each deployed, benchmarked and
// cleaned; it ends succeeded with a comparison v2 report built from the cases' metrics, and
// workflow.finished is emitted once.
func TestEvaluationRunsCasesInOrderAndReports(t *testing.T) {
	w, _ := newWorld(t)
	f := w.orchestrator("a", time.Hour)
	w.ttft["guide-1"], w.ttft["baseline-1"] = 50, 100
	cfg := w.configuration("optimized-baseline", optimized)
	id := w.evaluation(`{"cluster_session_id":"` + w.session + `","benchmark_plans":[{"id":"p","configuration_artifact_id":"` + cfg + `"}]}`)
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	wf := w.waitFor(id, "succeeded and cleaned", func(wf *workflow.Workflow) bool {
		return wf.Status == "succeeded" && wf.AllCases()[0].CleanupStatus.Get() == "cleaned" && wf.AllCases()[1].CleanupStatus.Get() == "cleaned"
	})
	if got := statuses(wf); !slices.Equal(got, []string{"succeeded", "succeeded"}) || !wf.FinishedAt.Present() {
		t.Fatalf("cases %v", got)
	}
	var report struct {
		Version     int `json:"comparison_version"`
		Comparisons []struct {
			Guide      string             `json:"guide_case_id"`
			Baseline   string             `json:"baseline_case_id"`
			Type       string             `json:"baseline_type"`
			Delta      map[string]float64 `json:"delta_percent"`
			GuideConf  map[string]any     `json:"guide_configuration"`
			GuideStats map[string]any     `json:"guide_metrics"`
		} `json:"comparisons"`
	}
	if !workflow.Decode(json.RawMessage(wf.Report), &report) || report.Version != 2 || len(report.Comparisons) != 1 {
		t.Fatalf("report %s", wf.Report)
	}
	c := report.Comparisons[0]
	if c.Guide != "guide-1" || c.Baseline != "baseline-1" || c.Type != "direct-vllm" || c.Delta["ttft_ms"] != -50 {
		t.Fatalf("comparison %+v", c)
	}
	if c.GuideConf["guide"] != "optimized-baseline" || c.GuideConf["replicas"] != 2.0 {
		t.Fatalf("guide facts %v", c.GuideConf)
	}
	if w.live() != 0 {
		t.Fatalf("%d deployments left", w.live())
	}
	// workflow.finished is emitted after the terminal status is stored: wait for it, then
	// check it announced one end. Delivery is at least once: an announcement not recorded within
	// ResendAfter (300 ms here, which a loaded host can exceed between the send and its record:
	// "sent 2 times" in the race pass) is taken over and sent again, with the same event id, by
	// which subscribers drop the repeat.
	for deadline := time.Now().Add(5 * time.Second); w.count(events.TypeWorkflowFinished) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if ids := w.ids(events.TypeWorkflowFinished); len(ids) != 1 {
		t.Fatalf("workflow.finished sent with %d event ids %v, want one", len(ids), ids)
	}
	// The baseline deployed a stored, system-generated artifact; each case's run is linked.
	b := wf.Case("baseline-1")
	art, err := w.inv.Configuration(context.Background(), b.DeploymentConfigurationID.Get())
	if err != nil || art.ProviderRef != "baseline-vllm" || art.Type != "baseline" {
		t.Fatalf("baseline artifact %+v %v", art, err)
	}
	run, err := w.runs.Load(context.Background(), b.EvaluationRunID.Get())
	if err != nil || evalrun.Str(run.EvaluationWorkflow) != id || evalrun.Str(run.EvaluationCase) != "baseline-1" || evalrun.Str(run.DeploymentOwnership) != "evaluation" {
		t.Fatalf("baseline run %v %v", run, err)
	}
	// More events change nothing once the end is recorded as announced.
	w.waitFor(id, "announced", func(wf *workflow.Workflow) bool { return wf.Internal.FinishedAnnounced })
	before := w.count(events.TypeWorkflowFinished)
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	if n := w.count(events.TypeWorkflowFinished); n != before {
		t.Fatalf("workflow.finished repeated: %d sends, %d before", n, before)
	}
	_ = f
}

// A use of a deployment left held by a run that ended (re-taken after the end by a repeated
// create, or never given back by a runner that died between its end and its release) does not
// keep the deployment forever: with no sweep, the evaluation still ends with both
// deployments cleaned and their uses given back (seen under load: the baseline's cleanup
// waited on "used by 1 active run" for a run that had succeeded). The world takes the use back
// just after the run ended, so a cleanup asked for in between is refused and retried.
func TestAUseLeftByAnEndedRunDoesNotBlockCleanup(t *testing.T) {
	w, _ := newWorld(t)
	f := w.orchestrator("a", time.Hour) // started: a cleanup refused meanwhile is retried on its timer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	w.mu.Lock()
	w.keepUse = true
	w.mu.Unlock()
	id := w.startGuideAndBaseline()
	wf := w.waitFor(id, "succeeded and cleaned", func(wf *workflow.Workflow) bool {
		return wf.Status == "succeeded" && wf.Case("guide-1").CleanupStatus.Get() == "cleaned" &&
			wf.Case("baseline-1").CleanupStatus.Get() == "cleaned"
	})
	if w.live() != 0 {
		t.Fatalf("%d deployments left", w.live())
	}
	for _, c := range wf.AllCases() {
		if _, err := w.inv.Execution(context.Background(), c.ExecutionID.Get()); problem.CodeOf(err) != problem.CodeNotFound {
			t.Fatalf("case %s: execution still recorded (%v)", c.ID, err)
		}
	}
}

// A kubernetes-service baseline runs right after its guide on the guide's balanced endpoint;
// the guide's deployment is kept until it finished, then cleaned once.
func TestKubernetesServiceBaselineReusesTheGuide(t *testing.T) {
	w, _ := newWorld(t)
	w.orchestrator("a", time.Hour)
	cfg := w.configuration("optimized-baseline", optimized)
	id := w.evaluation(`{"cluster_session_id":"` + w.session + `","benchmark_plans":[{"configuration_artifact_id":"` + cfg + `","baseline_types":["kubernetes-service"]}]}`)
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	wf := w.waitFor(id, "succeeded and cleaned", func(wf *workflow.Workflow) bool {
		return wf.Status == "succeeded" && wf.Case("guide-1").CleanupStatus.Get() == "cleaned"
	})
	g, b := wf.Case("guide-1"), wf.Case("baseline-1")
	if b.ExecutionID.Get() != g.ExecutionID.Get() || b.Endpoint.Get() != g.BaselineURL.Get() || b.Endpoint.Get() == "" {
		t.Fatalf("baseline ran on %s (guide %s, balanced %s)", b.Endpoint.Get(), g.Endpoint.Get(), g.BaselineURL.Get())
	}
	run, _ := w.runs.Load(context.Background(), b.EvaluationRunID.Get())
	if evalrun.Str(run.EndpointKind) != "kubernetes-service" || run.UseBaselineEndpoint == nil {
		t.Fatalf("run %s", mustJSON(run))
	}
	w.mu.Lock()
	cleanups := w.cleanups
	w.mu.Unlock()
	if w.count(events.TypeDeploymentRequested) != 1 || cleanups != 1 {
		t.Fatalf("deployed %d, cleaned %d; want one deployment", w.count(events.TypeDeploymentRequested), cleanups)
	}
}

// Cancelling a case mid-benchmark stops its run, cleans its deployment, and only then marks
// it cancelled; unrelated cases continue and the workflow ends cancelled. A retry runs the
// cancelled case again (succeeded cases kept) and the workflow succeeds.
func TestCancelCaseThenRetry(t *testing.T) {
	w, _ := newWorld(t)
	w.orchestrator("a", time.Hour)
	w.holdRuns = true
	id := w.startGuideAndBaseline()
	wf := w.waitFor(id, "guide benchmarking", func(wf *workflow.Workflow) bool { return wf.Case("guide-1").Status == "benchmarking" })
	runID := wf.Case("guide-1").EvaluationRunID.Get()
	w.waitRun(runID, "running")
	repo := &workflow.Repo{Store: w.deps.Store}
	// What POST .../cases/guide-1/cancel records (evaluation-api), then its wake-up event.
	_, err := repo.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		c := wf.Case("guide-1")
		c.CancelRequested = rawjson.Some(true)
		c.Status = "cancelling"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.holdRuns = false
	w.mu.Unlock()
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	wf = w.waitFor(id, "cancelled", func(wf *workflow.Workflow) bool { return wf.Status == "cancelled" })
	if got := statuses(wf); !slices.Equal(got, []string{"cancelled", "succeeded"}) {
		t.Fatalf("cases %v", got)
	}
	if run, _ := w.runs.Load(context.Background(), runID); run.Status != "cancelled" {
		t.Fatalf("guide run is %s", run.Status)
	}
	if g := wf.Case("guide-1"); g.CleanupStatus.Get() != "cleaned" {
		t.Fatalf("guide cancelled before its cleanup: %s", mustJSON(g))
	}
	w.waitFor(id, "baseline cleaned", func(wf *workflow.Workflow) bool { return wf.Case("baseline-1").CleanupStatus.Get() == "cleaned" })
	_, err = repo.Update(context.Background(), id, func(wf *workflow.Workflow) error {
		return wf.Retry(func(*workflow.Case) bool { return false }, func(*workflow.Case) error { return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	wf = w.waitFor(id, "succeeded after retry", func(wf *workflow.Workflow) bool { return wf.Status == "succeeded" })
	if got := statuses(wf); !slices.Equal(got, []string{"succeeded", "succeeded"}) {
		t.Fatalf("cases %v", got)
	}
	if newRun := wf.Case("guide-1").EvaluationRunID.Get(); newRun == runID || len(wf.RunIDs()) != 3 {
		t.Fatalf("retry ran %s again (runs %v)", newRun, wf.RunIDs())
	}
	w.waitFor(id, "all cleaned", func(wf *workflow.Workflow) bool {
		return wf.Case("guide-1").CleanupStatus.Get() == "cleaned" && wf.Case("baseline-1").CleanupStatus.Get() == "cleaned"
	})
	if w.live() != 0 {
		t.Fatalf("%d deployments left", w.live())
	}
}

// A whole-workflow cancel whose cleanup fails keeps the workflow cancelling with
// cancellation_error; a retried cancel cleans up and ends it cancelled.
func TestCancelWithFailedCleanupIsRetried(t *testing.T) {
	w, _ := newWorld(t)
	w.orchestrator("a", time.Hour)
	w.holdRuns = true
	id := w.startGuideAndBaseline()
	w.waitFor(id, "guide benchmarking", func(wf *workflow.Workflow) bool { return wf.Case("guide-1").Status == "benchmarking" })
	w.mu.Lock()
	w.failCleanup = true
	w.mu.Unlock()
	repo := &workflow.Repo{Store: w.deps.Store}
	cancel := func() {
		_, err := repo.Update(context.Background(), id, func(wf *workflow.Workflow) error {
			wf.Status = "cancelling"
			wf.CancellationError = rawjson.Opt[string]{}
			for _, c := range wf.AllCases() {
				c.CancelRequested = rawjson.Some(true)
				if !workflow.CaseTerminal(c.Status) {
					c.Status = "cancelling"
				}
				if c.CleanupStatus.Get() == "failed" {
					c.CleanupStatus = rawjson.Some("retry")
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	}
	cancel()
	wf := w.waitFor(id, "cancellation_error", func(wf *workflow.Workflow) bool { return wf.CancellationError.Get() != "" })
	if wf.Status != "cancelling" || wf.Case("guide-1").Status != "cancelling" {
		t.Fatalf("failed cleanup must keep the workflow cancelling: %s %v", wf.Status, statuses(wf))
	}
	w.mu.Lock()
	w.failCleanup = false
	w.mu.Unlock()
	cancel()
	wf = w.waitFor(id, "cancelled", func(wf *workflow.Workflow) bool { return wf.Status == "cancelled" })
	if got := statuses(wf); !slices.Equal(got, []string{"cancelled", "cancelled"}) || w.live() != 0 {
		t.Fatalf("cases %v, %d live", got, w.live())
	}
}

// The orchestrator keeps nothing between events: with every deployment.ready lost and the
// instance replaced mid-workflow, a fresh instance's sweep finishes the evaluation from the
// store alone, with each case deployed once per attempt.
func TestAFreshInstanceFinishesFromTheStore(t *testing.T) {
	w, _ := newWorld(t)
	w.orchestrator("a", time.Hour)
	w.dropReady = true
	id := w.startGuideAndBaseline()
	w.waitFor(id, "guide deploying", func(wf *workflow.Workflow) bool { return wf.Case("guide-1").Status == "deploying" })
	// Instance a "dies"; b starts with a sweep. The lost ready events are re-asked for
	// (ResendAfter); the world answers repeats from its record, as the deployer does.
	w.mu.Lock()
	w.dropReady = false
	w.mu.Unlock()
	f := w.orchestrator("b", 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	wf := w.waitFor(id, "succeeded and cleaned", func(wf *workflow.Workflow) bool {
		return wf.Status == "succeeded" && wf.Case("baseline-1").CleanupStatus.Get() == "cleaned" && wf.Case("guide-1").CleanupStatus.Get() == "cleaned"
	})
	execs := map[string]bool{}
	w.mu.Lock()
	for _, e := range w.seen {
		if e.Type == events.TypeDeploymentRequested {
			var d events.DeploymentRequested
			_ = json.Unmarshal(e.Data, &d)
			execs[d.ExecutionID] = true
		}
	}
	w.mu.Unlock()
	if len(execs) != 2 || w.live() != 0 {
		t.Fatalf("deployments %v (want one per case), %d live", execs, w.live())
	}
	_ = wf
}

// A failed deployment fails its case (failed_stage deploying) and the workflow; what was
// started is cleaned.
func TestFailedDeploymentFailsTheWorkflow(t *testing.T) {
	w, _ := newWorld(t)
	w.orchestrator("a", time.Hour)
	cfg := w.configuration("optimized-baseline", optimized)
	id := w.evaluation(`{"cluster_session_id":"` + w.session + `","benchmark_plans":[{"configuration_artifact_id":"` + cfg + `"}]}`)
	// Make the guide's artifact vanish from the deployer's point of view: it answers failed.
	_ = w.deps.Store.Delete(context.Background(), inventory.KindConfiguration, cfg, state.DeleteOptions{})
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: id})
	wf := w.waitFor(id, "failed", func(wf *workflow.Workflow) bool { return wf.Status == "failed" })
	g := wf.Case("guide-1")
	if g.Status != "failed" || g.FailedStage.Get() != "deploying" || wf.FailedStage.Get() != "deploying" || wf.Error.Get() == "" {
		t.Fatalf("failed workflow %s", mustJSON(wf))
	}
	if wf.Case("baseline-1").Status != "queued" {
		t.Fatal("later cases stay queued")
	}
	w.waitFor(id, "announced", func(wf *workflow.Workflow) bool { return wf.Internal.FinishedAnnounced })
}

// A simple workflow deploys, benchmarks (status benchmarking with the child run) and copies
// the child's terminal status and metrics.
func TestSimpleWorkflow(t *testing.T) {
	w, _ := newWorld(t)
	w.orchestrator("a", time.Hour)
	w.ttft["deployment"] = 7
	cfg := w.configuration("optimized-baseline", optimized)
	wf := workflow.NewSimple(evalrun.NewID(), workflow.SimpleRequest{Model: "m", ClusterSessionID: w.session}, "cluster", cfg, inventory.NewID())
	if err := (&workflow.Repo{Store: w.deps.Store}).Create(context.Background(), wf); err != nil {
		t.Fatal(err)
	}
	w.deliver(events.TypeWorkflowQueued, events.WorkflowQueued{WorkflowID: wf.ID})
	done := w.waitFor(wf.ID, "succeeded", func(x *workflow.Workflow) bool { return x.Status == "succeeded" })
	var metrics map[string]any
	if !workflow.Decode(done.Metrics, &metrics) || metrics["ttft_ms"] != 7.0 || done.EvaluationRunID.Get() == "" {
		t.Fatalf("simple workflow %s", mustJSON(done))
	}
	w.waitFor(wf.ID, "cleaned", func(x *workflow.Workflow) bool { return x.AllCases()[0].CleanupStatus.Get() == "cleaned" })
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
