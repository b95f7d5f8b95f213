package workfloworchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// maxCleanupAttempts bounds the automatic retries of a failed cleanup.
const maxCleanupAttempts = 5

// effect is an act decided by a step, carried out only after the step's write succeeded.
type effect func(ctx context.Context) error

// step is one advance of one workflow: the record being changed and the acts it implies.
type step struct {
	o       *Orchestrator
	ctx     context.Context
	wf      *workflow.Workflow
	effects []effect
	changed bool
}

func (s *step) do(e effect) { s.effects = append(s.effects, e) }

// Advance moves a workflow as far as its record and the world allow: one write of the record,
// then the acts that write decided. It repeats while a step changed something (a finished
// case lets the next one start) and stops when nothing moves.
func (o *Orchestrator) Advance(ctx context.Context, id string) error {
	for range 32 {
		var s *step
		_, err := o.workflows.Update(ctx, id, func(wf *workflow.Workflow) error {
			s = &step{o: o, ctx: ctx, wf: wf}
			if err := s.advance(); err != nil {
				return err
			}
			if !s.changed {
				return workflow.ErrUnchanged
			}
			return nil
		})
		if err != nil {
			o.m.advances.WithLabelValues("failed").Inc()
			return err
		}
		failed := false
		for _, e := range s.effects {
			if err := e(ctx); err != nil {
				failed = true
				o.deps.Log.Warnw("workflow act failed; the sweep repeats it", "workflow", id, "error", err)
			}
		}
		if failed {
			return nil // the next event or sweep looks again
		}
		if !s.changed {
			o.m.advances.WithLabelValues("unchanged").Inc()
			return nil
		}
		o.m.advances.WithLabelValues("changed").Inc()
	}
	return nil
}

// ownsDeployment reports whether the case deployed something of its own that is not cleaned.
func ownsDeployment(c *workflow.Case) bool {
	return !c.SharesGuidePods() && c.ExecutionID.Get() != "" && c.DeploymentStatus.Get() != "cleaned" &&
		c.CleanupStatus.Get() != "cleaned"
}

func (s *step) advance() error {
	wf := s.wf
	switch {
	case wf.Status == workflow.StatusCancelling:
		return s.cancelling()
	case workflow.Terminal(wf.Status):
		s.cleanupAll()
		s.announce()
		return nil
	}
	if wf.Status == workflow.StatusQueued && !wf.Simple() {
		wf.Status = workflow.StatusRunning
		if !wf.StartedAt.Present() {
			wf.StartedAt = rawjson.Some(evalrun.Now())
		}
		s.changed = true
	}
	// Cases a case cancel named: stop, clean, then cancelled.
	for _, c := range wf.AllCases() {
		if c.CancelRequested.Get() && !workflow.CaseTerminal(c.Status) {
			if err := s.cancelCase(c); err != nil {
				return err
			}
		}
	}
	for _, c := range wf.AllCases() {
		if workflow.CaseTerminal(c.Status) || c.CancelRequested.Get() {
			continue
		}
		// Cases run one at a time, in order: this is the active one.
		if err := s.stepCase(c); err != nil {
			return err
		}
		if !workflow.CaseTerminal(c.Status) {
			break
		}
		if c.Status == workflow.CaseFailed {
			s.fail(c)
			break
		}
	}
	if wf.Simple() {
		s.mirrorSimple()
	}
	s.releaseFinished()
	if !workflow.Terminal(wf.Status) {
		s.maybeFinish()
	}
	return nil
}

// stepCase moves one active case by its status.
func (s *step) stepCase(c *workflow.Case) error {
	switch c.Status {
	case workflow.CaseQueued:
		if c.SharesGuidePods() {
			return s.startSharedBaseline(c)
		}
		return s.deploy(c)
	case workflow.CaseDeploying:
		switch c.DeploymentStatus.Get() {
		case "ready":
			return s.benchmark(c)
		case "failed":
			s.failCase(c, workflow.CaseDeploying, "deployment failed: "+c.DeploymentError.Get())
		default:
			if !c.DeploymentRequestedAt.Present() || s.stale(c.DeploymentRequestedAt.Get()) {
				s.requestDeployment(c)
			}
		}
	case workflow.CaseBenchmarking:
		return s.watchRun(c)
	}
	return nil
}

func (s *step) stale(at string) bool {
	t, err := time.Parse(time.RFC3339Nano, at)
	return err != nil || s.o.now().Sub(t) > s.o.settings.ResendAfter
}

// deploy picks the case's execution id and configuration and requests the deployment.
func (s *step) deploy(c *workflow.Case) error {
	configID := c.ConfigurationArtifactID.Get()
	if configID == "" {
		id, err := s.baselineArtifact(c)
		if err != nil {
			var p *problem.Error
			if errors.As(err, &p) && p.Code.Status() < 500 {
				s.failCase(c, workflow.CaseQueued, "the baseline configuration cannot be stored: "+err.Error())
				return nil
			}
			return err
		}
		configID = id
	}
	exec := inventory.NewID()
	c.DeploymentConfigurationID = rawjson.Some(configID)
	c.ExecutionID = rawjson.Some(exec)
	c.DeploymentRunID = rawjson.Some(exec)
	c.DeploymentStatus = rawjson.Some("deploying")
	c.Status = workflow.CaseDeploying
	s.changed = true
	if !c.StartedAt.Present() {
		c.StartedAt = rawjson.Some(evalrun.Now())
		s.changed = true
	}
	s.requestDeployment(c)
	return nil
}

// baselineArtifact finds (by checksum) or stores the configuration a baseline case deploys, so
// a repeated step never stores it twice.
func (s *step) baselineArtifact(c *workflow.Case) (string, error) {
	if id := c.DeploymentConfigurationID.Get(); id != "" {
		return id, nil
	}
	var snap struct {
		ProviderRef string          `json:"provider_ref"`
		Checksum    string          `json:"checksum"`
		Content     json.RawMessage `json:"content"`
		Provenance  json.RawMessage `json:"provenance"`
	}
	if !workflow.Decode(c.DeploymentConfiguration, &snap) {
		return "", problem.New(problem.CodeBadRequest, "case %s has no deployment configuration", c.ID)
	}
	found, _, err := s.o.inv.ListConfigurations(s.ctx, inventory.ConfigurationQuery{Type: inventory.ConfigurationBaseline,
		ProviderRef: snap.ProviderRef, Checksum: snap.Checksum, Page: inventory.Page{Limit: 1}})
	if err != nil {
		return "", err
	}
	if len(found) > 0 {
		return found[0].ID, nil
	}
	cfg, err := s.o.inv.CreateConfiguration(s.ctx, inventory.ConfigurationSpec{Name: s.wf.ID + " " + c.ID,
		SchemaVersion: inventory.ConfigurationSchemaV1, Type: inventory.ConfigurationBaseline, Format: inventory.ConfigurationFormat,
		ProviderRef: snap.ProviderRef, Content: snap.Content, Provenance: snap.Provenance})
	return cfg.ID, err
}

func (s *step) requestDeployment(c *workflow.Case) {
	c.DeploymentRequestedAt = rawjson.Some(evalrun.Now())
	s.changed = true
	configID := c.DeploymentConfigurationID.Get()
	if configID == "" {
		configID = c.ConfigurationArtifactID.Get()
	}
	data := events.DeploymentRequested{ExecutionID: c.ExecutionID.Get(), ConfigurationID: configID,
		ClusterSessionID: s.wf.ClusterSessionID.Get(), CaseRef: s.wf.ID + "/" + c.ID, Name: c.DeploymentName.Get()}
	s.do(func(ctx context.Context) error {
		s.o.m.deployments.Inc()
		return s.o.send(ctx, events.TypeDeploymentRequested, data.ExecutionID+"/requested/"+evalrun.Now(), data.ExecutionID, data)
	})
}

// startSharedBaseline benchmarks a kubernetes-service baseline on its guide's plain balanced
// endpoint (the same pods without the router).
func (s *step) startSharedBaseline(c *workflow.Case) error {
	g := s.wf.Case(c.DependentGuideCaseID.Get())
	if g == nil || g.Status != workflow.CaseSucceeded || g.DeploymentStatus.Get() != "ready" {
		s.failCase(c, workflow.CaseQueued, "no ready Guide deployment is available to reuse for this baseline")
		return nil
	}
	if g.BaselineURL.Get() == "" {
		s.failCase(c, workflow.CaseQueued, "this Guide does not expose a kubernetes-service baseline endpoint for comparison")
		return nil
	}
	c.ExecutionID = rawjson.Some(g.ExecutionID.Get())
	c.Endpoint = rawjson.Some(g.BaselineURL.Get())
	c.Model = rawjson.Some(g.Model.Get())
	s.changed = true
	if g.ReplicaEndpoints.Present() {
		c.ReplicaEndpoints = g.ReplicaEndpoints
		s.changed = true
	}
	c.StartedAt = rawjson.Some(evalrun.Now())
	s.changed = true
	return s.benchmark(c)
}

// benchmark creates the case's benchmark run (a name-based id: a repeat finds the same run) and
// moves the case to benchmarking.
func (s *step) benchmark(c *workflow.Case) error {
	exec := c.ExecutionID.Get()
	target := evalrun.Target{ExecutionID: exec, ClusterSessionID: s.wf.ClusterSessionID.Get(), ClusterID: s.wf.ClusterID.Get(),
		Name: s.wf.ID + "/" + c.ID, Model: c.Model.Get(), Endpoint: c.Endpoint.Get(), Ownership: workflow.OwnershipEvaluation,
		Status: "ready"}
	if key, err := s.o.inv.ExecutionAPIKey(s.ctx, exec); err == nil {
		target.APIKey = key
	} else if problem.CodeOf(err) == problem.CodeNotFound {
		s.failCase(c, c.Status, "the deployment execution "+exec+" is no longer recorded")
		return nil
	} else {
		return err
	}
	run, err := s.wf.NewRun(c, target)
	if err != nil {
		s.failCase(c, c.Status, "the benchmark cannot be created: "+err.Error())
		return nil
	}
	// The evidence (prefix cache hits, queues) is the replicas': the runner reads them from the
	// execution's replica_endpoints (a router's /metrics has no vllm series).
	c.EvaluationRunID = rawjson.Some(run.ID)
	c.Status = workflow.CaseBenchmarking
	s.changed = true
	s.wf.AddRunID(run.ID)
	s.do(func(ctx context.Context) error { return s.o.createRun(ctx, run, target) })
	return nil
}

// createRun stores a case's run, holds its execution for it and announces it. A repeat (an
// advance that found the run missing before its first creation landed) leaves a stored run
// alone: taking the use again could hold the execution for a run that already ended and
// released it, and nothing would ever release it again.
func (o *Orchestrator) createRun(ctx context.Context, run *evalrun.Run, target evalrun.Target) error {
	if _, err := o.runs.Load(ctx, run.ID); err == nil {
		return nil
	} else if !errors.Is(err, state.ErrNotFound) {
		return err
	}
	// The use is taken before the run exists, so no runner can end it unheld.
	if err := o.inv.AcquireUse(ctx, target.ExecutionID, run.ID); err != nil {
		return err
	}
	err := o.runs.Create(ctx, run, target.APIKey)
	if errors.Is(err, state.ErrExists) {
		// Created meanwhile by the racing advance; if it has ended too, the use just taken is
		// one its runner already gave back.
		if cur, lerr := o.runs.Load(ctx, run.ID); lerr == nil && evalrun.Terminal(cur.Status) {
			return o.inv.ReleaseUse(ctx, target.ExecutionID, run.ID)
		}
		return nil
	}
	if err != nil {
		return err
	}
	o.m.runs.Inc()
	o.runs.Logf(ctx, run.ID, "Queued by workflow %s case %s against %s", evalrun.Str(run.EvaluationWorkflow),
		evalrun.Str(run.EvaluationCase), target.Endpoint)
	return o.send(ctx, events.TypeRunQueued, run.ID+"/queued", run.ID, events.RunQueued{RunID: run.ID})
}

// watchRun follows a benchmarking case's run and takes its result when it ends.
func (s *step) watchRun(c *workflow.Case) error {
	runID := c.EvaluationRunID.Get()
	if runID == "" { // a retry on a still-ready deployment: a new run
		return s.benchmark(c)
	}
	run, err := s.o.runs.Load(s.ctx, runID)
	if errors.Is(err, state.ErrNotFound) {
		// The write that chose the run was saved but its creation was lost: create it again.
		s.wf.Case(c.ID).EvaluationRunID = rawjson.Null[string]()
		return s.benchmark(c)
	}
	if err != nil {
		return err
	}
	if !evalrun.Terminal(run.Status) {
		return nil
	}
	c.FinishedAt = rawjson.Some(evalrun.Now())
	s.changed = true
	doc := run.Document()
	for _, k := range workflow.RunResultFields {
		if v, ok := doc[k]; ok {
			*c.ResultField(k) = v
		}
	}
	switch run.Status {
	case evalrun.StatusSucceeded:
		c.Status = workflow.CaseSucceeded
		c.Error = rawjson.Null[string]()
		s.changed = true
	case evalrun.StatusCancelled:
		if c.CancelRequested.Get() {
			c.Status = workflow.CaseCancelled
			s.changed = true
			return nil
		}
		s.failCase(c, workflow.CaseBenchmarking, "the benchmark run was cancelled outside the workflow")
	default:
		msg := run.ErrorText()
		if msg == "" {
			msg = "the benchmark run failed"
		}
		s.failCase(c, workflow.CaseBenchmarking, msg)
	}
	return nil
}

func (s *step) failCase(c *workflow.Case, stage, msg string) {
	c.Status = workflow.CaseFailed
	c.FailedStage = rawjson.Some(stage)
	c.Error = rawjson.Some(msg)
	s.changed = true
	if !c.FinishedAt.Present() {
		c.FinishedAt = rawjson.Some(evalrun.Now())
		s.changed = true
	}
}

// fail ends the workflow with a failed case: failed_stage is benchmarking when the case had a
// run, else the case's.
func (s *step) fail(c *workflow.Case) {
	stage := c.FailedStage.Get()
	if c.EvaluationRunID.Get() != "" {
		stage = workflow.StatusBenchmarking
	}
	s.wf.Status = workflow.StatusFailed
	s.wf.FailedStage = rawjson.Some(stage)
	s.wf.Error = rawjson.Some(fmt.Sprintf("case %s failed: %s", c.ID, c.Error.Get()))
	s.wf.FinishedAt = rawjson.Some(evalrun.Now())
	s.changed = true
}

// maybeFinish ends an evaluation whose every case finished: succeeded with its report as soon as
// every case succeeded (cleanup continues after), cancelled when a case was cancelled.
func (s *step) maybeFinish() {
	cancelled := false
	for _, c := range s.wf.AllCases() {
		if !workflow.CaseTerminal(c.Status) {
			return
		}
		if c.Status != workflow.CaseSucceeded {
			if !c.CancelRequested.Get() {
				return
			}
			cancelled = true
		}
	}
	status := workflow.StatusSucceeded
	if cancelled {
		status = workflow.StatusCancelled
	}
	if !s.wf.Simple() {
		s.wf.SetReport(s.wf.BuildReport(s.o.now()))
	}
	s.wf.Status = status
	s.wf.FinishedAt = rawjson.Some(evalrun.Now())
	s.changed = true
}

// mirrorSimple shows a simple workflow's single case on the workflow: deploying, then
// benchmarking with the child run, then the child's terminal status and metrics.
func (s *step) mirrorSimple() {
	c := s.wf.AllCases()[0]
	if id := c.EvaluationRunID.Get(); id != "" && s.wf.EvaluationRunID.Get() != id {
		s.wf.EvaluationRunID = rawjson.Some(id)
		s.changed = true
	}
	if c.Status == workflow.CaseBenchmarking && s.wf.Status == workflow.StatusDeploying {
		s.wf.Status = workflow.StatusBenchmarking
		s.changed = true
	}
	if (c.Metrics != nil) && string(s.wf.Metrics) != string(c.Metrics) {
		s.wf.Metrics = c.Metrics
		s.changed = true
	}
	if ep := c.Endpoint.Get(); ep != "" && s.wf.Endpoint.Get() != ep {
		s.wf.Endpoint = rawjson.Some(ep)
		s.changed = true
	}
}

// inUse reports whether a non-terminal case still needs the execution (its run, or a
// kubernetes-service baseline that will run on it).
func (s *step) inUse(exec string, except *workflow.Case) bool {
	for _, c := range s.wf.AllCases() {
		if c == except || c.ExecutionID.Get() != exec && !(c.SharesGuidePods() && s.guideExec(c) == exec) {
			continue
		}
		// While the workflow runs, a case still to come needs the deployment too (a guide waits
		// for its kubernetes-service baselines); once it ended, only a live run does.
		if !workflow.Terminal(s.wf.Status) && !workflow.CaseTerminal(c.Status) && !(c.CancelRequested.Get() && c.EvaluationRunID.Get() == "") {
			return true
		}
		if id := c.EvaluationRunID.Get(); id != "" {
			if run, err := s.o.runs.Load(s.ctx, id); err == nil && !evalrun.Terminal(run.Status) {
				return true
			}
		}
	}
	return false
}

func (s *step) guideExec(c *workflow.Case) string {
	if g := s.wf.Case(c.DependentGuideCaseID.Get()); g != nil {
		return g.ExecutionID.Get()
	}
	return ""
}

// releaseFinished cleans the owned deployments no remaining case needs (a guide waits for its
// kubernetes-service baselines; a preserved one stays).
func (s *step) releaseFinished() {
	for _, c := range s.wf.AllCases() {
		if workflow.CaseTerminal(c.Status) && !c.PreserveDeployment.Get() {
			s.cleanup(c, false)
		}
	}
}

// cleanupAll cleans every owned deployment of a finished workflow (preserved ones stay).
func (s *step) cleanupAll() {
	for _, c := range s.wf.AllCases() {
		if !c.PreserveDeployment.Get() || s.wf.Status != workflow.StatusSucceeded {
			s.cleanup(c, false)
		}
	}
}

// cleanup requests the cleanup of the case's deployment once nothing uses it; force repeats a
// request that failed (a retried cancel).
func (s *step) cleanup(c *workflow.Case, force bool) {
	if !ownsDeployment(c) {
		return
	}
	status := c.CleanupStatus.Get()
	attempts := c.CleanupAttempts.Get()
	switch {
	// Outside a cancel, a failed cleanup is retried a few times by itself (a run's use of the
	// execution may be released just after the run ended); a cancel reports it instead and
	// waits for the cancel to be retried.
	case status == "failed" && !force && (s.wf.Status == workflow.StatusCancelling || attempts >= maxCleanupAttempts ||
		!s.stale(c.CleanupRequestedAt.Get())):
		return
	case status == "requested" && !s.stale(c.CleanupRequestedAt.Get()):
		return
	}
	exec := c.ExecutionID.Get()
	if s.inUse(exec, c) {
		return
	}
	ended, live := s.uses(exec)
	if live {
		return // a run still holds it: its run.finished (sent after its runner released it) advances again
	}
	if status != "requested" {
		c.CleanupStatus = rawjson.Some("requested")
		c.CleanupAttempts = rawjson.Some(attempts + 1)
		s.changed = true
	}
	c.CleanupRequestedAt = rawjson.Some(evalrun.Now())
	s.changed = true
	data := events.DeploymentCleanupRequested{ExecutionID: exec, CaseRef: s.wf.ID + "/" + c.ID}
	s.do(func(ctx context.Context) error {
		for _, id := range ended {
			if err := s.o.inv.ReleaseUse(ctx, exec, id); err != nil {
				return err
			}
		}
		s.o.m.cleanups.Inc()
		return s.o.send(ctx, events.TypeDeploymentCleanupRequested, exec+"/cleanup/"+evalrun.Now(), exec, data)
	})
}

// uses reads who holds the execution: live when a run that has not ended does (or one not
// stored yet: its creator takes the use first), else the ended runs whose use is left over (a
// use re-taken after its run had ended, a runner that died between its end and its release),
// which the cleanup gives back before it asks for the delete, since nothing else will.
func (s *step) uses(exec string) (ended []string, live bool) {
	users, err := s.o.inv.ExecutionUsers(s.ctx, exec)
	if err != nil {
		return nil, false // gone (or unreadable): the deployer's delete has the last word
	}
	for _, id := range users {
		run, err := s.o.runs.Load(s.ctx, id)
		if err != nil || !evalrun.Terminal(run.Status) {
			return nil, true
		}
		ended = append(ended, id)
	}
	return ended, false
}

// cancelCase carries out a cancel on one case: its run is stopped, then its owned deployment
// cleaned, then the case is cancelled. A failed cleanup leaves it cancelling.
func (s *step) cancelCase(c *workflow.Case) error {
	if c.Status != workflow.CaseCancelling {
		c.Status = workflow.CaseCancelling
		s.changed = true
	}
	if id := c.EvaluationRunID.Get(); id != "" {
		run, err := s.o.runs.Load(s.ctx, id)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return err
		}
		if err == nil && !evalrun.Terminal(run.Status) {
			s.do(func(ctx context.Context) error { return s.o.cancelRun(ctx, id) })
			return nil
		}
		if err == nil {
			doc := run.Document()
			for _, k := range workflow.RunResultFields {
				if k == "sla" {
					continue // a cancelled case keeps no verdict
				}
				if field := c.ResultField(k); *field == nil {
					if v, ok := doc[k]; ok {
						*field = v
						s.changed = true
					}
				}
			}
		}
	}
	retry := c.CleanupStatus.Get() == "retry"
	if retry {
		c.CleanupStatus = rawjson.Some("failed")
		s.changed = true
	}
	s.cleanup(c, retry)
	if ownsDeployment(c) {
		if c.CleanupStatus.Get() == "failed" && s.wf.Status == workflow.StatusCancelling &&
			s.wf.CancellationError.Get() != c.CleanupError.Get() {
			s.wf.CancellationError = rawjson.Some(c.CleanupError.Get())
			s.changed = true
		}
		if c.CleanupStatus.Get() == "" && s.inUse(c.ExecutionID.Get(), c) {
			return nil // another case's run still uses it: wait
		}
		return nil
	}
	c.Status = workflow.CaseCancelled
	s.changed = true
	if !c.FinishedAt.Present() {
		c.FinishedAt = rawjson.Some(evalrun.Now())
		s.changed = true
	}
	return nil
}

// cancelRun stops a case's run: a queued one at once, a running one by its runner.
func (o *Orchestrator) cancelRun(ctx context.Context, id string) error {
	_, err := o.runs.Transition(ctx, id, []string{evalrun.StatusQueued}, evalrun.StatusCancelled, state.Fence{}, func(run *evalrun.Run) error {
		run.Internal.CancelRequested = true
		run.FinishedAt, run.Error = evalrun.Ptr(evalrun.Now()), rawjson.Null[string]()
		return nil
	})
	if err == nil {
		run, _ := o.runs.Load(ctx, id)
		if run != nil {
			_ = o.inv.ReleaseUse(ctx, evalrun.Str(run.DeploymentExecutionID), id)
		}
		return o.send(ctx, events.TypeRunFinished, id+"/finished", id, events.RunFinished{RunID: id, Status: evalrun.StatusCancelled})
	}
	if !errors.Is(err, state.ErrInvalidTransition) {
		return err
	}
	_, err = o.runs.Transition(ctx, id, []string{evalrun.StatusRunning, evalrun.StatusCancelling}, evalrun.StatusCancelling, state.Fence{},
		func(run *evalrun.Run) error { run.Internal.CancelRequested = true; return nil })
	if errors.Is(err, state.ErrInvalidTransition) {
		return nil // it ended meanwhile
	}
	return err
}

// cancelling carries out a whole-workflow cancel: every case stopped and cleaned, then the
// workflow cancelled (cleanup before cancelled). A failed cleanup sets cancellation_error and
// the workflow stays cancelling until a cancel is retried.
func (s *step) cancelling() error {
	done := true
	for _, c := range s.wf.AllCases() {
		if !c.CancelRequested.Get() {
			c.CancelRequested = rawjson.Some(true)
			s.changed = true
		}
		if workflow.CaseTerminal(c.Status) {
			if ownsDeployment(c) && !c.PreserveDeployment.Get() {
				retry := c.CleanupStatus.Get() == "retry"
				if retry {
					c.CleanupStatus = rawjson.Some("failed")
					s.changed = true
				}
				s.cleanup(c, retry)
				if c.CleanupStatus.Get() == "failed" && s.wf.CancellationError.Get() != c.CleanupError.Get() {
					s.wf.CancellationError = rawjson.Some(c.CleanupError.Get())
					s.changed = true
				}
				done = false
			}
			continue
		}
		if err := s.cancelCase(c); err != nil {
			return err
		}
		if !workflow.CaseTerminal(c.Status) {
			done = false
		}
	}
	if !done {
		return nil
	}
	s.wf.Status = workflow.StatusCancelled
	s.wf.CancellationError = rawjson.Opt[string]{}
	s.wf.FinishedAt = rawjson.Some(evalrun.Now())
	s.changed = true
	return nil
}

// announce emits workflow.finished once per attempt, after the end was saved.
func (s *step) announce() {
	if s.wf.Internal.FinishedAnnounced {
		return
	}
	// One instance claims the announcement in the record (the version check lets one of racing
	// instances win); a claim left by an instance that died before sending is taken over.
	if claim := s.wf.Internal.FinishedClaimedAt; claim != "" && !s.stale(claim) {
		return
	}
	s.wf.Internal.FinishedClaimedAt = evalrun.Now()
	s.changed = true
	wf := s.wf
	data := events.WorkflowFinished{WorkflowID: wf.ID, Kind: wf.Internal.Kind, Status: wf.Status, FinishedAt: wf.FinishedAt.Get()}
	if msg := wf.Error.Get(); msg != "" {
		data.Error = &msg
	}
	if st := wf.FailedStage.Get(); st != "" {
		data.FailedStage = &st
	}
	if !wf.Simple() {
		data.CaseCount = len(wf.Cases)
		var report struct {
			Comparisons []json.RawMessage `json:"comparisons"`
		}
		workflow.Decode(json.RawMessage(wf.Report), &report)
		data.Comparisons = len(report.Comparisons)
	}
	o := s.o
	s.do(func(ctx context.Context) error {
		// Sent first, recorded after: a crash between the two sends it again (at least once;
		// the event id, the workflow and its finished_at, lets subscribers drop a repeat).
		if err := o.send(ctx, events.TypeWorkflowFinished, wf.ID+"/finished/"+data.FinishedAt, wf.ID, data); err != nil {
			return err
		}
		o.m.finished.WithLabelValues(wf.Internal.Kind, data.Status).Inc()
		_, err := o.workflows.Update(ctx, wf.ID, func(cur *workflow.Workflow) error {
			if cur.Internal.FinishedAnnounced || cur.FinishedAt.Get() != data.FinishedAt {
				return workflow.ErrUnchanged
			}
			cur.Internal.FinishedAnnounced = true
			return nil
		})
		return err
	})
}

func (o *Orchestrator) send(ctx context.Context, eventType, id, subject string, data any) error {
	err := o.deps.Events.Send(ctx, eventType, id, subject, data)
	if errors.Is(err, cloudevent.ErrNoSink) {
		return nil
	}
	return err
}
