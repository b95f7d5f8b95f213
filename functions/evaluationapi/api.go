package evaluationapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/report/runreport"
	"github.com/lensfn/lensfn/runtime/sse"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// Name is the function's Knative Service name.
const Name = "evaluation-api"

// Prefix is the route prefix of the evaluation API.
const Prefix = "/api/v1/evaluate"

// Consumes lists the event types the function receives at /events.
var Consumes = []string{events.TypeRunRequested, events.TypeKnativePing, events.TypeEvaluationRequested}

// maxListed bounds GET /runs.
const maxListed = 500

// maxRunBody admits a run request with the largest workload_yaml (256 KiB) and its other fields.
const maxRunBody = evalrun.MaxWorkloadYAMLBytes + 64<<10

// Defaults is the BenchmarkDefaultsResponse.
type Defaults struct {
	Mode                   string `json:"mode"`
	Repository             string `json:"repository"`
	Revision               string `json:"revision"`
	LocalRuntimeConfigured bool   `json:"localRuntimeConfigured"` // the established wire key
}

// API serves /api/v1/evaluate.
type API struct {
	deps      fn.Deps
	runs      *evalrun.Repo
	inventory Inventory
	defaults  Defaults
	// cancelWait is how long cancel waits for the runner to confirm before answering cancelling.
	cancelWait time.Duration
	created    *prometheus.CounterVec
	// workflows and inv serve the workflow routes; workflowWait is how long a workflow cancel
	// or delete waits for the orchestrator before answering.
	workflows        *workflow.Repo
	inv              *inventory.Repo
	workflowWait     time.Duration
	workflowsCreated *prometheus.CounterVec
	// watchers holds a slot per open event stream; streamLimits bound each one.
	watchers     sse.Slots
	streamLimits sse.Limits
	// doc is the OpenAPI document rendered from the route table.
	doc []byte
}

// Settings are the function's own, read from the environment at start (fn.Config.ReadSettings).
type Settings struct {
	// StaticExecutions are deployment executions the operator registers in the environment
	// (LENS_STATIC_EXECUTIONS, a JSON array; parseStaticExecutions checks it).
	StaticExecutions string `env:"LENS_STATIC_EXECUTIONS"`
	// LLMDBenchmarkExecutable and LLMDBenchmarkRoot are what benchmark-defaults reports as a
	// local llm-d-benchmark runtime (LLM_D_BENCHMARK_EXECUTABLE, LLM_D_BENCHMARK_ROOT).
	LLMDBenchmarkExecutable string `env:"LLM_D_BENCHMARK_EXECUTABLE"`
	LLMDBenchmarkRoot       string `env:"LLM_D_BENCHMARK_ROOT"`
}

// Validate trims the llm-d-benchmark paths.
func (s *Settings) Validate() error {
	s.LLMDBenchmarkExecutable = strings.TrimSpace(s.LLMDBenchmarkExecutable)
	s.LLMDBenchmarkRoot = strings.TrimSpace(s.LLMDBenchmarkRoot)
	return nil
}

// Build is the function's fn.Builder.
func Build(_ context.Context, d fn.Deps) (*fn.Function, error) {
	var s Settings
	if err := d.Config.ReadSettings(&s); err != nil {
		return nil, err
	}
	static, err := parseStaticExecutions(s.StaticExecutions)
	if err != nil {
		return nil, err
	}
	sealer, err := d.Config.Sealer()
	if err != nil {
		return nil, err
	}
	f, _, err := New(d, repoInventory{repo: &inventory.Repo{Store: d.Store, Sealer: sealer}, static: static})
	return f, err
}

// New builds the function over an inventory (tests pass their own).
func New(d fn.Deps, inv Inventory) (*fn.Function, *API, error) {
	var settings Settings
	if err := d.Config.ReadSettings(&settings); err != nil {
		return nil, nil, err
	}
	sealer, err := d.Config.Sealer()
	if err != nil {
		return nil, nil, err
	}
	a := &API{deps: d, inventory: inv, cancelWait: 1500 * time.Millisecond,
		runs:     &evalrun.Repo{Store: d.Store, Sealer: sealer, DataDir: d.Config.DataDir},
		defaults: defaultsFrom(settings), watchers: sse.NewSlots(maxWatchers),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_evaluation_runs_created_total",
			Help: "Benchmark runs created, by origin (rest or event)."}, []string{"origin"}),
		workflows: &workflow.Repo{Store: d.Store}, inv: &inventory.Repo{Store: d.Store, Sealer: sealer},
		workflowWait: 10 * time.Second,
		workflowsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_evaluation_workflows_created_total",
			Help: "Workflows created, by kind (simple or evaluation) and origin (rest or event)."}, []string{"kind", "origin"})}
	streams := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lens_evaluation_run_event_streams_open",
		Help: "Benchmark-run event streams (GET /runs/{id}/events) open on this instance."},
		func() float64 { return float64(a.watchers.Open()) })
	d.Metrics.Registry.MustRegister(a.created, a.workflowsCreated, streams)
	routes, err := a.routes()
	if err != nil {
		return nil, nil, err
	}
	return &fn.Function{
		Routes: routes,
		Events: map[string]cloudevent.Handler{events.TypeRunRequested: a.onRunRequested, events.TypeKnativePing: a.onPing,
			events.TypeEvaluationRequested: a.onEvaluationRequested},
	}, a, nil
}

// defaultsFrom follows the reference: a local llm-d-benchmark runtime is configured when
// LLM_D_BENCHMARK_EXECUTABLE or LLM_D_BENCHMARK_ROOT is set or llmdbenchmark is on the PATH.
func defaultsFrom(c Settings) Defaults {
	d := Defaults{Mode: "managed-source", Repository: evalrun.DefaultRepository, Revision: evalrun.DefaultRevision}
	_, lookErr := exec.LookPath("llmdbenchmark")
	executable := c.LLMDBenchmarkExecutable != ""
	if executable || lookErr == nil {
		d.Mode = "local-runtime"
	}
	d.LocalRuntimeConfigured = executable || lookErr == nil || c.LLMDBenchmarkRoot != ""
	return d
}

func (a *API) benchmarkDefaults(w http.ResponseWriter, _ *http.Request) error {
	fn.WriteJSON(w, http.StatusOK, a.defaults)
	return nil
}

func (a *API) timingEstimate(w http.ResponseWriter, r *http.Request) error {
	var spec events.BenchmarkSpec
	if err := fn.DecodeJSON(r, &spec, true); err != nil {
		return err
	}
	if err := evalrun.ValidateSpec(spec); err != nil {
		if problem.CodeOf(err) != problem.CodeValidation {
			// A preview answers for any well-formed spec; unknown harnesses and workloads are
			// simply of unknown timing.
			fn.WriteJSON(w, http.StatusOK, evalrun.Estimate(spec))
			return nil
		}
		return err
	}
	fn.WriteJSON(w, http.StatusOK, evalrun.Estimate(spec))
	return nil
}

func (a *API) createRun(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	run, err := a.create(r.Context(), body, "", evalrun.NewID())
	if err != nil {
		return err
	}
	a.created.WithLabelValues("rest").Inc()
	fn.WriteJSON(w, http.StatusAccepted, run)
	return nil
}

// readBody reads a JSON body (the runtime's cap) for the raw-preserving parser.
func readBody(r *http.Request) ([]byte, error) {
	var raw json.RawMessage
	if err := fn.DecodeJSON(r, &raw, false); err != nil {
		return nil, err
	}
	return raw, nil
}

// create validates a POST /runs body, resolves its target, stores the run queued and announces
// it. REST and run.requested events both come here.
func (a *API) create(ctx context.Context, body []byte, idempotencyKey, id string) (*evalrun.Run, error) {
	req, raw, err := evalrun.ParseRequest(body)
	if err != nil {
		return nil, err
	}
	if err := evalrun.ValidateRequest(req); err != nil {
		return nil, err
	}
	target, apiKey, err := a.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := checkSpecificationFile(req.SpecificationFile, target); err != nil {
		return nil, err
	}
	run := evalrun.BuildRun(id, req, raw, target)
	run.Internal.IdempotencyKey = idempotencyKey
	// The owner is the identity of the token that created the run, or "event:<source>" for a
	// run.requested event (runtime/fn makes the sender the caller); null when nobody
	// authenticated (LENS_AUTH=off).
	run.OwnerUserID = rawjson.Null[string]()
	if owner, ok := ownerOf(ctx).(string); ok {
		run.OwnerUserID = rawjson.Some(owner)
	}
	if b := a.deps.Config.BackendID; b != "" {
		run.OwnerBackendID = &b // as stampOwner does for a workflow
	}
	if target.ModelServiceGroupID != "" {
		run.ModelServiceGroupID = &target.ModelServiceGroupID
	}
	// The execution may not be deleted while the run uses it; the runner releases the use
	// when the run ends.
	if err := a.inventory.AcquireUse(ctx, target.ExecutionID, id); err != nil {
		return nil, err
	}
	if err := a.runs.Create(ctx, run, apiKey); err != nil {
		if !errors.Is(err, state.ErrExists) {
			_ = a.inventory.ReleaseUse(context.WithoutCancel(ctx), target.ExecutionID, id)
		}
		if errors.Is(err, evalrun.ErrNoSealer) {
			return nil, problem.Wrap(problem.CodeBadRequest, err, "this installation cannot store API keys (LENS_SECRET_KEY is not set)")
		}
		return nil, err
	}
	a.runs.Logf(ctx, id, "Queued: %s against %s (%s)", describe(run), target.Endpoint, target.Model)
	a.announce(ctx, id)
	return run, nil
}

func describe(run *evalrun.Run) string {
	spec, err := run.Spec()
	if err != nil {
		return "benchmark"
	}
	switch {
	case len(spec.Matrix) > 0:
		return fmt.Sprintf("matrix of %d points x %d concurrency stages", len(spec.Matrix), len(evalrun.Stages(spec)))
	case spec.SharedPrefix != nil:
		return fmt.Sprintf("shared-prefix workload of %d rate stages", len(spec.SharedPrefix.Stages))
	case spec.WorkloadYAML != nil:
		return "inline workload_yaml"
	}
	return "workload " + *spec.Workload
}

// announce emits run.queued; a lost event is covered by the runners' queue sweep.
func (a *API) announce(ctx context.Context, id string) {
	err := a.deps.Events.Send(ctx, events.TypeRunQueued, id+"/queued", id, events.RunQueued{RunID: id})
	if err != nil && !errors.Is(err, cloudevent.ErrNoSink) {
		a.deps.Log.Warnw("run.queued not delivered; the runners' sweep picks the run up", "run", id, "error", err)
	}
}

// resolve finds the run's target and the key its requests carry.
func (a *API) resolve(ctx context.Context, req events.EvaluateRunRequest) (evalrun.Target, string, error) {
	access := ""
	if req.APIKey != nil {
		access = *req.APIKey
	}
	var target evalrun.Target
	var err error
	if req.ModelServiceGroupID != nil && *req.ModelServiceGroupID != "" {
		target, err = a.inventory.ModelService(ctx, *req.ModelServiceGroupID, access)
		target.ModelServiceGroupID = *req.ModelServiceGroupID
	} else {
		target, err = a.inventory.Execution(ctx, *req.DeploymentExecutionID)
	}
	if err != nil {
		return target, "", err
	}
	if req.ClusterSessionID != nil && *req.ClusterSessionID != "" && *req.ClusterSessionID != target.ClusterSessionID {
		return target, "", problem.New(problem.CodeBadRequest, "cluster_session_id %s does not match the execution's session", *req.ClusterSessionID)
	}
	if err := a.deps.Egress.Check(ctx, target.Endpoint); errors.Is(err, egress.ErrNotAllowed) {
		return target, "", problem.New(problem.CodeBadRequest, "the endpoint of %s is outside this installation's endpoint policy", target.ExecutionID)
	}
	if target.Status != "" && target.Status != "ready" {
		return target, "", problem.New(problem.CodeConflict, "deployment execution %s is %s, not ready", target.ExecutionID, target.Status)
	}
	// Requests carry the execution's own key; a Model Service's access key only authorizes. A
	// static execution has no key of its own, so the request's is used.
	key := target.APIKey
	if key == "" && target.ModelServiceGroupID == "" {
		key = access
	}
	return target, key, nil
}

func (a *API) listRuns(w http.ResponseWriter, r *http.Request) error {
	runs, err := a.runs.List(r.Context(), maxListed)
	if err != nil {
		return err
	}
	items := make([]*evalrun.Run, 0, len(runs))
	for _, run := range runs {
		items = append(items, run.ListItem())
	}
	fn.WriteJSON(w, http.StatusOK, map[string]any{"items": items})
	return nil
}

func (a *API) load(ctx context.Context, id string) (*evalrun.Run, error) {
	run, err := a.runs.Get(ctx, id)
	if errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) {
		return nil, problem.New(problem.CodeNotFound, "benchmark run %s not found", id)
	}
	return run, err
}

func (a *API) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := a.load(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, withDetail(run))
	return nil
}

// ownerOf is the owner of what a request creates: the identity of the token that made it; null
// when nobody authenticated (LENS_AUTH=off, or an event).
func ownerOf(ctx context.Context) any {
	if tok, ok := fn.Caller(ctx); ok {
		return tok.ID
	}
	return nil
}

// withDetail adds the read-only context a detail read shows when the record lacks it: the
// known configuration (none for an existing endpoint), the endpoint the traffic went to and the
// deployment case it ran against.
func withDetail(run *evalrun.Run) *evalrun.Run {
	if run.Configuration == nil {
		run.Configuration = json.RawMessage("null")
	}
	if _, stored := run.Extra["endpoint_used"]; run.EndpointUsed == nil && !stored {
		run.EndpointUsed = run.Endpoint
	}
	if run.DeploymentCases == nil {
		run.DeploymentCases = evalrun.JSON([]map[string]any{{
			"id": evalrun.Str(run.DeploymentExecutionID), "execution_id": evalrun.Str(run.DeploymentExecutionID),
			"guide": nil, "namespace": run.Namespace, "endpoint": evalrun.Str(run.Endpoint),
			"status": "ready", "execution_status": "ready", "monitoring_setup": nil, "diagnostics": nil,
			"resource_snapshot": map[string]any{},
		}})
	}
	return run
}

// CancelResponse is the EvaluationCancelResponse.
type CancelResponse struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (a *API) cancelRun(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	run, err := a.load(ctx, id)
	if err != nil {
		return err
	}
	if err := a.checkRunOwner(ctx, run); err != nil {
		return err
	}
	// A run a workflow case owns is cancelled as that case (its deployment is the case's to clean).
	if wfID, caseID := a.owningCase(ctx, run); wfID != "" && evalrun.Active(run.Status) {
		res, err := a.cancelWorkflowCase(ctx, wfID, caseID)
		if err != nil {
			return err
		}
		fn.WriteJSON(w, http.StatusOK, CancelResponse{ID: id, Status: res.Status})
		return nil
	}
	switch run.Status {
	case evalrun.StatusCancelled:
		fn.WriteJSON(w, http.StatusOK, CancelResponse{ID: id, Status: evalrun.StatusCancelled})
		return nil
	case evalrun.StatusSucceeded, evalrun.StatusFailed:
		return problem.New(problem.CodeConflict, "benchmark run %s is %s; only an active run can be cancelled", id, run.Status)
	case evalrun.StatusQueued:
		// Nobody runs it yet: cancel it at once. A runner that claims it meanwhile makes this
		// transition fail, and the run is then cancelled as a running one.
		_, err := a.runs.Transition(ctx, id, []string{evalrun.StatusQueued}, evalrun.StatusCancelled, state.Fence{}, func(run *evalrun.Run) error {
			run.Internal.CancelRequested = true
			run.FinishedAt, run.Error = evalrun.Ptr(evalrun.Now()), rawjson.Null[string]()
			return nil
		})
		if err == nil {
			_ = a.inventory.ReleaseUse(ctx, evalrun.Str(run.DeploymentExecutionID), id)
			a.runs.Logf(ctx, id, "Cancelled before it started")
			a.finished(ctx, id)
			fn.WriteJSON(w, http.StatusOK, CancelResponse{ID: id, Status: evalrun.StatusCancelled})
			return nil
		}
		if !errors.Is(err, state.ErrInvalidTransition) {
			return err
		}
	}
	_, err = a.runs.Transition(ctx, id, []string{evalrun.StatusRunning, evalrun.StatusCancelling}, evalrun.StatusCancelling, state.Fence{}, func(run *evalrun.Run) error {
		run.Internal.CancelRequested = true
		return nil
	})
	if err != nil && !errors.Is(err, state.ErrInvalidTransition) {
		return err
	}
	a.runs.Logf(ctx, id, "Cancel requested")
	status := a.waitTerminal(ctx, id)
	if status == evalrun.StatusSucceeded || status == evalrun.StatusFailed {
		return problem.New(problem.CodeConflict, "benchmark run %s finished %s before the cancel took effect", id, status)
	}
	fn.WriteJSON(w, http.StatusOK, CancelResponse{ID: id, Status: status})
	return nil
}

// waitTerminal waits up to cancelWait for the lease holder to carry out a cancel.
func (a *API) waitTerminal(ctx context.Context, id string) string {
	deadline := time.Now().Add(a.cancelWait)
	for {
		run, err := a.runs.Load(ctx, id)
		if err != nil {
			return evalrun.StatusCancelling
		}
		if evalrun.Terminal(run.Status) || time.Now().After(deadline) {
			return run.Status
		}
		select {
		case <-ctx.Done():
			return run.Status
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// finished announces a run the API itself ended (cancelled before it started).
func (a *API) finished(ctx context.Context, id string) {
	err := a.deps.Events.Send(ctx, events.TypeRunFinished, id+"/finished", id,
		events.RunFinished{RunID: id, Status: evalrun.StatusCancelled})
	if err != nil && !errors.Is(err, cloudevent.ErrNoSink) {
		a.deps.Log.Warnw("run.finished not delivered", "run", id, "error", err)
	}
}

func (a *API) deleteRun(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	rec, err := a.deps.Store.Get(ctx, evalrun.Kind, id)
	if errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) {
		return problem.New(problem.CodeNotFound, "benchmark run %s not found", id)
	}
	if err != nil {
		return err
	}
	run, err := evalrun.Unmarshal(rec.Doc)
	if err == nil {
		if err := a.checkRunOwner(ctx, run); err != nil {
			return err
		}
	}
	if !evalrun.Terminal(rec.Status) {
		return problem.New(problem.CodeConflict, "benchmark run %s is %s; cancel it and wait until it ends before deleting it", id, rec.Status)
	}
	if err == nil {
		if wfID, _ := a.owningCase(ctx, run); wfID != "" {
			return problem.New(problem.CodeConflict, "benchmark run %s belongs to workflow %s; delete the workflow instead", id, wfID)
		}
	}
	if err := a.runs.Delete(ctx, id, rec.Version); err != nil {
		if errors.Is(err, state.ErrVersionConflict) {
			return problem.New(problem.CodeConflict, "benchmark run %s changed while it was being deleted; try again", id)
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Artifact kinds a run offers.
const (
	kindJSONL = "per-request-jsonl"
	kindCSV   = runreport.KindCSV
	kindHTML  = runreport.KindHTML
)

// reportCSP locks a report page down: opened in a browser from the API's origin, it may load
// and run nothing.
const reportCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

// downloadArtifact answers a run's artifact as an attachment: the per-request records as JSON
// lines (what the runner wrote) or CSV, or the HTML report, both rendered from the stored run
// at the time of the request.
func (a *API) downloadArtifact(w http.ResponseWriter, r *http.Request) error {
	id, kind := r.PathValue("id"), r.PathValue("kind")
	run, err := a.load(r.Context(), id)
	if err != nil {
		return err
	}
	path := a.runs.RecordsPath(id)
	switch kind {
	case kindHTML:
		var page bytes.Buffer // rendered whole first, so a failure is still a problem answer
		if err := runreport.WriteHTML(&page, run, path, time.Now()); err != nil {
			return err
		}
		attachment(w, "text/html; charset=utf-8", id+"-report.html")
		w.Header().Set("Content-Security-Policy", reportCSP)
		_, _ = w.Write(page.Bytes())
		return nil
	case kindJSONL, kindCSV:
	default:
		return problem.New(problem.CodeNotFound, "unknown artifact kind %q; a run has %s, %s and %s", kind, kindJSONL, kindCSV, kindHTML)
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return problem.New(problem.CodeNotFound, "benchmark run %s has no per-request records yet", id)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if kind == kindCSV {
		attachment(w, "text/csv; charset=utf-8", id+"-per-request.csv")
		err = runreport.WriteCSV(w, path)
	} else {
		attachment(w, "application/x-ndjson", id+"-per-request.jsonl")
		_, err = io.Copy(w, f)
	}
	if err != nil {
		a.deps.Log.Warnw("artifact download cut short", "run", id, "kind", kind, "error", err)
	}
	return nil
}

func attachment(w http.ResponseWriter, mediaType, filename string) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Disposition", `attachment; filename="`+filename+`"`)
}

// onRunRequested creates a run from a user's event exactly as POST /runs does. The run id is
// derived from the idempotency key, so every delivery and every event carrying the same key
// names the same run. Invalid payloads are rejected for good (never retried).
func (a *API) onRunRequested(ctx context.Context, e cloudevent.Event) error {
	return a.createFromEvent(ctx, e, "")
}

// onPing creates a run from a PingSource's firing whose data is a run.requested payload
// (extension lensfnevent=run.requested). A PingSource sends the same data every time, so the
// run is named by the idempotency key plus the firing: its minute (a PingSource fires at most
// once a minute, and a redelivery keeps the event's time), or its id when the event has no time.
func (a *API) onPing(ctx context.Context, e cloudevent.Event) error {
	if got := e.Extensions[events.ExtensionLensfnEvent]; got != events.TypeRunRequested {
		return cloudevent.Permanent(fmt.Errorf("a PingSource event needs the extension %s=%s (ceOverrides), got %q",
			events.ExtensionLensfnEvent, events.TypeRunRequested, got))
	}
	firing := e.ID
	if !e.Time.IsZero() {
		firing = e.Time.UTC().Truncate(time.Minute).Format("2006-01-02T15:04Z")
	}
	return a.createFromEvent(ctx, e, "@"+firing)
}

// createFromEvent creates the run a run.requested payload asks for; suffix distinguishes the
// firings of a schedule that sends one key every time.
func (a *API) createFromEvent(ctx context.Context, e cloudevent.Event, suffix string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(e.Data, &fields); err != nil || fields == nil {
		return cloudevent.Permanent(fmt.Errorf("run.requested data is not a JSON object"))
	}
	var key string
	if err := json.Unmarshal(fields["idempotency_key"], &key); err != nil || key == "" || len(key) > evalrun.MaxIdempotencyKeyLen {
		return cloudevent.Permanent(fmt.Errorf("run.requested needs an idempotency_key of 1-%d characters", evalrun.MaxIdempotencyKeyLen))
	}
	delete(fields, "idempotency_key")
	key += suffix
	body, _ := json.Marshal(fields)
	id := idFromKey(key)
	_, err := a.create(ctx, body, key, id)
	switch {
	case err == nil:
		a.created.WithLabelValues("event").Inc()
		a.deps.Log.Infow("run created from run.requested", "run", id, "event", e.ID)
		return nil
	case errors.Is(err, state.ErrExists):
		return nil // an earlier event with this key created it
	case problem.CodeOf(err).Status() < 500 && !problem.CodeOf(err).Retryable():
		a.deps.Log.Warnw("run.requested rejected", "event", e.ID, "error", err)
		return cloudevent.Permanent(err)
	}
	return err
}

// idFromKey is a UUID (version 8, name-based) derived from an idempotency key.
func idFromKey(key string) string {
	sum := sha256.Sum256([]byte("lensfn/evaluation/run.requested\x00" + key))
	return uuidFrom(sum[:16])
}

// uuidFrom makes a version 8 UUID of 16 hashed bytes.
func uuidFrom(b []byte) string {
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
