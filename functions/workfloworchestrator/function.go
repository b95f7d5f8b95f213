package workfloworchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// Name is the function's Knative Service name.
const Name = "workflow-orchestrator"

// Consumes lists the event types the orchestrator handles.
var Consumes = []string{events.TypeWorkflowQueued, events.TypeDeploymentReady, events.TypeDeploymentFailed,
	events.TypeDeploymentCleaned, events.TypeRunFinished}

// Settings are the orchestrator's knobs.
type Settings struct {
	// SweepInterval is how often every workflow with work ahead is advanced from the store
	// (LENS_SWEEP_INTERVAL).
	SweepInterval time.Duration `env:"LENS_SWEEP_INTERVAL" envDefault:"2s"`
	// ResendAfter is how long a deployment or cleanup request waits for its answer before the
	// sweep sends it again (the deployer answers a repeat from its record): five sweeps when
	// read from the environment.
	ResendAfter time.Duration
}

// Validate refuses a zero sweep interval and sets ResendAfter to five sweeps.
func (s *Settings) Validate() error {
	if s.SweepInterval == 0 {
		return errors.New("LENS_SWEEP_INTERVAL must be a positive duration")
	}
	if s.ResendAfter == 0 {
		s.ResendAfter = 5 * s.SweepInterval
	}
	return nil
}

// Orchestrator advances workflows.
type Orchestrator struct {
	deps      fn.Deps
	settings  Settings
	workflows *workflow.Repo
	runs      *evalrun.Repo
	inv       *inventory.Repo
	m         metrics
	now       func() time.Time

	lifeMu  sync.Mutex
	life    context.Context // Run's, while it runs: the lifetime of the cleanup retries
	retries sync.WaitGroup  // cleanup retries timed and not yet over
}

type metrics struct {
	advances    *prometheus.CounterVec
	finished    *prometheus.CounterVec
	deployments prometheus.Counter
	cleanups    prometheus.Counter
	runs        prometheus.Counter
	sweeps      prometheus.Counter
}

// Build is the function's fn.Builder.
func Build(_ context.Context, d fn.Deps) (*fn.Function, error) {
	sealer, err := secret.FromEnv(d.Config.SecretKey.Reveal())
	if err != nil {
		return nil, err
	}
	var s Settings
	if err := d.Config.ReadSettings(&s); err != nil {
		return nil, err
	}
	o := New(d, s, sealer)
	return o.Function(), nil
}

// New builds an orchestrator.
func New(d fn.Deps, s Settings, sealer *secret.Sealer) *Orchestrator {
	if s.ResendAfter <= 0 {
		s.ResendAfter = 10 * time.Second
	}
	o := &Orchestrator{deps: d, settings: s, now: time.Now,
		workflows: &workflow.Repo{Store: d.Store},
		runs:      &evalrun.Repo{Store: d.Store, Sealer: sealer, DataDir: d.Config.DataDir},
		inv:       &inventory.Repo{Store: d.Store, Sealer: sealer},
		m: metrics{
			advances: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_workflow_advances_total",
				Help: "Workflow advances, by outcome (changed, unchanged, failed)."}, []string{"outcome"}),
			finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_workflows_finished_total",
				Help: "Workflows that reached a terminal status, by kind and status."}, []string{"kind", "status"}),
			deployments: prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_workflow_deployments_requested_total",
				Help: "deployment.requested events sent (repeats included)."}),
			cleanups: prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_workflow_cleanups_requested_total",
				Help: "deployment.cleanup.requested events sent (repeats included)."}),
			runs: prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_workflow_benchmark_runs_created_total",
				Help: "Benchmark runs the orchestrator created for cases."}),
			sweeps: prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_workflow_sweeps_total",
				Help: "Sweeps over the workflows with work ahead."}),
		}}
	d.Metrics.Registry.MustRegister(o.m.advances, o.m.finished, o.m.deployments, o.m.cleanups, o.m.runs, o.m.sweeps)
	return o
}

// Function is the orchestrator as a runtime function.
func (o *Orchestrator) Function() *fn.Function {
	return &fn.Function{
		Events: map[string]cloudevent.Handler{
			events.TypeWorkflowQueued:    o.onWorkflowQueued,
			events.TypeDeploymentReady:   o.onDeploymentReady,
			events.TypeDeploymentFailed:  o.onDeploymentFailed,
			events.TypeDeploymentCleaned: o.onDeploymentCleaned,
			events.TypeRunFinished:       o.onRunFinished,
		},
		Start: o.Run,
	}
}

// Run is the Start hook: a sweep at start (work a killed instance left) and every interval.
// It returns once the cleanup retries it timed have stopped.
func (o *Orchestrator) Run(ctx context.Context) {
	o.lifeMu.Lock()
	o.life = ctx
	o.lifeMu.Unlock()
	defer func() {
		o.lifeMu.Lock()
		o.life = nil
		o.lifeMu.Unlock()
		o.retries.Wait()
	}()
	leasedrun.Periodic{Interval: o.settings.SweepInterval, Log: o.deps.Log, Msg: "workflow sweep failed",
		QuietErrors: []error{state.ErrUnavailable}}.Run(ctx, o.Sweep)
}

// maxSwept bounds one sweep.
const maxSwept = 500

// Sweep advances every workflow with work ahead: active ones, and finished ones whose cleanup
// or finished event is still pending.
func (o *Orchestrator) Sweep(ctx context.Context) error {
	o.m.sweeps.Inc()
	all, err := o.workflows.List(ctx, maxSwept)
	if err != nil {
		return err
	}
	for _, wf := range all {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if workflow.Terminal(wf.Status) && !o.pending(wf) {
			continue
		}
		if err := o.Advance(ctx, wf.ID); err != nil && !errors.Is(err, state.ErrNotFound) {
			o.deps.Log.Warnw("advancing workflow failed", "workflow", wf.ID, "error", err)
		}
	}
	return nil
}

// pending reports whether a finished workflow still has work: an unannounced end, or an owned
// deployment not yet cleaned.
func (o *Orchestrator) pending(wf *workflow.Workflow) bool {
	if !wf.Internal.FinishedAnnounced {
		return true
	}
	for _, c := range wf.AllCases() {
		attempts := c.CleanupAttempts.Get()
		if ownsDeployment(c) && !c.PreserveDeployment.Get() && (c.CleanupStatus.Get() != "failed" || attempts < maxCleanupAttempts) {
			return true
		}
	}
	return false
}

func (o *Orchestrator) onWorkflowQueued(ctx context.Context, e cloudevent.Event) error {
	var data events.WorkflowQueued
	if err := e.DecodeData(&data); err != nil {
		return err
	}
	return o.advanceEvent(ctx, data.WorkflowID)
}

// advanceEvent advances a workflow an event names; an unknown workflow (deleted) is ignored.
func (o *Orchestrator) advanceEvent(ctx context.Context, id string) error {
	err := o.Advance(ctx, id)
	if errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) {
		return nil
	}
	return err
}

// splitRef splits a case_ref "<workflow id>/<case id>".
func splitRef(ref string) (string, string, bool) {
	wf, c, ok := strings.Cut(ref, "/")
	return wf, c, ok && wf != "" && c != ""
}

// recordCase applies an answer to the case it names (when the case still waits on that
// execution), then advances the workflow.
func (o *Orchestrator) recordCase(ctx context.Context, ref, executionID string, apply func(c *workflow.Case)) error {
	wfID, caseID, ok := splitRef(ref)
	if !ok {
		return cloudevent.Permanent(fmt.Errorf("case_ref %q is not <workflow>/<case>", ref))
	}
	_, err := o.workflows.Update(ctx, wfID, func(wf *workflow.Workflow) error {
		c := wf.Case(caseID)
		if c == nil || c.ExecutionID.Get() != executionID {
			return workflow.ErrUnchanged // an answer about a deployment the case no longer uses
		}
		apply(c)
		return nil
	})
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return o.advanceEvent(ctx, wfID)
}

func (o *Orchestrator) onDeploymentReady(ctx context.Context, e cloudevent.Event) error {
	var data events.DeploymentReady
	if err := e.DecodeData(&data); err != nil {
		return err
	}
	return o.recordCase(ctx, data.CaseRef, data.ExecutionID, func(c *workflow.Case) {
		if c.DeploymentStatus.Get() == "cleaned" || c.CleanupStatus.Get() != "" {
			return // cleanup was already requested; the deployer abandons and cleans it
		}
		c.DeploymentStatus = rawjson.Some("ready")
		c.Endpoint = rawjson.Some(data.Endpoint)
		c.BaselineURL = rawjson.Some(data.BaselineURL)
		c.Provider = rawjson.Some(data.Provider)
		c.ProviderRef = rawjson.Some(data.ProviderRef)
		c.Model = rawjson.Some(data.Model)
		c.ReplicaEndpoints = rawjson.Some(data.ReplicaEndpoints)
		c.Namespace = rawjson.Null[string]()
	})
}

func (o *Orchestrator) onDeploymentFailed(ctx context.Context, e cloudevent.Event) error {
	var data events.DeploymentFailed
	if err := e.DecodeData(&data); err != nil {
		return err
	}
	err := o.recordCase(ctx, data.CaseRef, data.ExecutionID, func(c *workflow.Case) {
		if data.Operation == "cleanup" {
			c.CleanupStatus = rawjson.Some("failed")
			c.CleanupError = rawjson.Some(data.Error)
			return
		}
		c.DeploymentStatus = rawjson.Some("failed")
		c.DeploymentError = rawjson.Some(data.Error)
	})
	if err == nil && data.Operation == "cleanup" {
		if wfID, _, ok := splitRef(data.CaseRef); ok {
			o.retryCleanupLater(wfID)
		}
	}
	return err
}

// retryCleanupLater advances the workflow again once its failed cleanup may be repeated
// (ResendAfter): a cleanup the deployer refused because a run took the deployment back for a
// moment is retried then, not at the next sweep, which may be long after (a cancel still waits
// for its retry: Advance decides). The timer lives while Run does (an instance not started
// leaves the retry to the next event); the sweep covers a restart.
func (o *Orchestrator) retryCleanupLater(id string) {
	o.lifeMu.Lock()
	ctx := o.life
	if ctx == nil {
		o.lifeMu.Unlock()
		return
	}
	o.retries.Add(1)
	o.lifeMu.Unlock()
	// The timer and the hook on ctx each stop the other, so neither outlives the retry (a hook
	// left registered per failed cleanup would pile up on Run's context).
	var stopHook func() bool
	ready := make(chan struct{})
	timer := time.AfterFunc(o.settings.ResendAfter, func() {
		defer o.retries.Done()
		<-ready
		stopHook()
		if ctx.Err() != nil {
			return
		}
		if err := o.advanceEvent(ctx, id); err != nil && ctx.Err() == nil {
			o.deps.Log.Warnw("retrying a failed cleanup failed; the sweep repeats it", "workflow", id, "error", err)
		}
	})
	stopHook = context.AfterFunc(ctx, func() {
		if timer.Stop() {
			o.retries.Done()
		}
	})
	close(ready)
}

func (o *Orchestrator) onDeploymentCleaned(ctx context.Context, e cloudevent.Event) error {
	var data events.DeploymentCleaned
	if err := e.DecodeData(&data); err != nil {
		return err
	}
	return o.recordCase(ctx, data.CaseRef, data.ExecutionID, func(c *workflow.Case) {
		c.CleanupStatus = rawjson.Some("cleaned")
		c.DeploymentStatus = rawjson.Some("cleaned")
		c.CleanupError = rawjson.Opt[string]{}
	})
}

func (o *Orchestrator) onRunFinished(ctx context.Context, e cloudevent.Event) error {
	var data events.RunFinished
	if err := e.DecodeData(&data); err != nil {
		return err
	}
	run, err := o.runs.Load(ctx, data.RunID)
	if errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) {
		return nil
	}
	if err != nil {
		return err
	}
	wfID := evalrun.Str(run.EvaluationWorkflow)
	if wfID == "" {
		return nil // a standalone run
	}
	return o.advanceEvent(ctx, wfID)
}
