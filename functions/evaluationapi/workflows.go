package evaluationapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/report/comparisonreport"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// maxEvaluationBody admits 20 plans with their benchmarks (workload_yaml included) and scenarios.
const maxEvaluationBody = 4 << 20

func (a *API) createSimple(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	req, err := workflow.ParseSimple(body)
	if err != nil {
		return err
	}
	session, err := a.inv.ActiveSession(ctx, req.ClusterSessionID)
	if err != nil {
		return err
	}
	id := evalrun.NewID()
	cfg, err := a.inv.CreateConfiguration(ctx, inventory.ConfigurationSpec{Name: "workflow " + id, SchemaVersion: inventory.ConfigurationSchemaV1,
		Type: inventory.ConfigurationBaseline, Format: inventory.ConfigurationFormat, ProviderRef: deployconfig.ProviderOptimizedBaseline,
		Content: req.Content(), Provenance: json.RawMessage(`{"system_generated":true,"workflow_id":"` + id + `"}`)})
	if err != nil {
		return err
	}
	wf := workflow.NewSimple(id, req, session.ClusterID, cfg.ID, inventory.NewID())
	a.stampWorkflowOwner(ctx, wf)
	if err := a.workflows.Create(ctx, wf); err != nil {
		return err
	}
	a.workflowsCreated.WithLabelValues("simple", "rest").Inc()
	a.wake(ctx, id)
	fn.WriteJSON(w, http.StatusAccepted, wf)
	return nil
}

func (a *API) createEvaluation(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	wf, err := a.evaluation(r.Context(), body, "", evalrun.NewID())
	if err != nil {
		return err
	}
	a.workflowsCreated.WithLabelValues("evaluation", "rest").Inc()
	fn.WriteJSON(w, http.StatusAccepted, wf)
	return nil
}

// evaluation validates an evaluation request, generates its cases, stores it queued and wakes
// the orchestrator. REST and evaluation.requested events both come here; nothing is saved
// when the request is refused.
func (a *API) evaluation(ctx context.Context, body []byte, idempotencyKey, id string) (*workflow.Workflow, error) {
	req, raw, err := workflow.ParseEvaluation(body)
	if err != nil {
		return nil, err
	}
	if err := workflow.ValidateEvaluation(req); err != nil {
		return nil, err
	}
	session, err := a.inv.ActiveSession(ctx, req.ClusterSessionID)
	if err != nil {
		return nil, err
	}
	wf, err := workflow.NewEvaluation(ctx, id, req, raw, a.inv.Configuration)
	if err != nil {
		return nil, err
	}
	wf.ClusterID = rawjson.Some(session.ClusterID)
	a.stampWorkflowOwner(ctx, wf)
	wf.Internal.IdempotencyKey = idempotencyKey
	if err := a.workflows.Create(ctx, wf); err != nil {
		return nil, err
	}
	a.wake(ctx, id)
	return wf, nil
}

// stampWorkflowOwner records who creates a workflow: the caller's token (null when nobody
// authenticated, see ownerOf) and this backend (nothing for the unnamed one, see stampOwner).
func (a *API) stampWorkflowOwner(ctx context.Context, wf *workflow.Workflow) {
	wf.OwnerUserID = rawjson.Null[string]()
	if owner, ok := ownerOf(ctx).(string); ok {
		wf.OwnerUserID = rawjson.Some(owner)
	}
	if b := a.deps.Config.BackendID; b != "" {
		wf.OwnerBackendID = rawjson.Some(b)
	}
}

// wake tells the orchestrator a workflow has work; a lost event is covered by its sweep.
func (a *API) wake(ctx context.Context, id string) {
	err := a.deps.Events.Send(ctx, events.TypeWorkflowQueued, id+"/"+evalrun.Now(), id, events.WorkflowQueued{WorkflowID: id})
	if err != nil && !errors.Is(err, cloudevent.ErrNoSink) {
		a.deps.Log.Warnw("workflow.queued not delivered; the orchestrator's sweep picks the workflow up", "workflow", id, "error", err)
	}
}

// caseHeavy are the case fields list items leave out.
var caseHeavy = []string{"metrics", workflow.FieldMatrixResults, workflow.FieldRateStageResults, workflow.FieldBootstrap,
	workflow.FieldRepetitionResults, "deployment_configuration"}

func (a *API) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	all, err := a.workflows.List(r.Context(), maxListed)
	if err != nil {
		return err
	}
	items := make([]json.RawMessage, 0, len(all))
	for _, wf := range all {
		var cases []map[string]any
		for _, c := range wf.AllCases() {
			if wf.Simple() {
				break
			}
			fields, err := c.Fields()
			if err != nil {
				return err
			}
			item := map[string]any{}
			for k, v := range fields {
				if !contains(caseHeavy, k) {
					item[k] = v
				}
			}
			item["configuration"] = wf.Facts(c)
			cases = append(cases, item)
		}
		out := wf.Without("report", "cases", "benchmark_plans")
		if !wf.Simple() {
			if cases == nil {
				cases = []map[string]any{}
			}
			out["cases"], _ = json.Marshal(cases)
		}
		raw, _ := json.Marshal(out)
		items = append(items, raw)
	}
	fn.WriteJSON(w, http.StatusOK, map[string]any{"items": items})
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (a *API) loadWorkflow(ctx context.Context, id string) (*workflow.Workflow, int64, error) {
	wf, version, err := a.workflows.Get(ctx, id)
	if errors.Is(err, state.ErrNotFound) || errors.Is(err, state.ErrInvalid) {
		return nil, 0, problem.New(problem.CodeNotFound, "workflow %s not found", id)
	}
	return wf, version, err
}

func (a *API) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	wf, _, err := a.loadWorkflow(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, wf)
	return nil
}

// workflowDetails expands each case with its deployment and benchmark run, and rebuilds a
// stored report that is stale (comparison.NeedsRefresh), saving the fresh one.
func (a *API) workflowDetails(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	wf, err := a.freshWorkflow(ctx, id)
	if err != nil {
		return err
	}
	cases := make([]map[string]any, 0, len(wf.Cases))
	for _, c := range wf.AllCases() {
		entry := map[string]any{"case": c, "deployment": nil, "deployment_cases": []any{}, "deployment_warning": nil, "evaluation": nil}
		if exec := c.ExecutionID.Get(); exec != "" {
			dep := map[string]any{"id": exec, "status": deploymentStatus(c)}
			dc := map[string]any{"id": c.ID, "status": deploymentStatus(c), "guide": c.ProviderRef, "attempt": c.Attempt.Get() + 1,
				"failure": c.DeploymentError, "execution_id": exec, "namespace": c.Namespace, "endpoint": c.Endpoint,
				"execution_status": deploymentStatus(c), "monitoring_setup": nil, "diagnostics": nil, "resource_snapshot": map[string]any{}}
			if e, err := a.inv.Execution(ctx, exec); err == nil {
				dep["status"], dc["execution_status"] = e.Status, e.Status
			} else if c.DeploymentStatus.Get() == "ready" {
				entry["deployment_warning"] = "the deployment execution is no longer recorded"
			}
			entry["deployment"], entry["deployment_cases"] = dep, []any{dc}
		}
		if runID := c.EvaluationRunID.Get(); runID != "" {
			if run, err := a.runs.Load(ctx, runID); err == nil {
				run.MatrixResults, run.RateStageResults, run.Bootstrap = nil, nil, nil // a case entry leaves them out
				entry["evaluation"] = withDetail(run)
			}
		}
		cases = append(cases, entry)
	}
	var report json.RawMessage = []byte("null")
	if wf.Report != nil {
		report = wf.Report.Raw()
	}
	fn.WriteJSON(w, http.StatusOK, map[string]any{"workflow": wf.Without("report"), "cases": cases, "report": report})
	return nil
}

// freshWorkflow loads a workflow, first rebuilding and saving a stored report that is stale
// (comparison.NeedsRefresh).
func (a *API) freshWorkflow(ctx context.Context, id string) (*workflow.Workflow, error) {
	wf, _, err := a.loadWorkflow(ctx, id)
	if err != nil || !hasReport(wf) || !comparison.NeedsRefresh(wf.Report.Raw()) {
		return wf, err
	}
	return a.workflows.Update(ctx, id, func(cur *workflow.Workflow) error {
		if !comparison.NeedsRefresh(cur.Report.Raw()) {
			return workflow.ErrUnchanged
		}
		cur.SetReport(cur.BuildReport(time.Now()))
		return nil
	})
}

// hasReport tells whether an evaluation has a stored comparison report (simple workflows never do).
func hasReport(wf *workflow.Workflow) bool {
	return !wf.Simple() && wf.Report.Ready()
}

// workflowReportHTML answers the evaluation's comparison report as one self-contained HTML
// page, locked down like a run's report (it may load and run nothing).
func (a *API) workflowReportHTML(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	wf, err := a.freshWorkflow(r.Context(), id)
	if err != nil {
		return err
	}
	if !hasReport(wf) {
		return problem.New(problem.CodeNotFound, "workflow %s has no comparison report yet (status %s); it is written when the evaluation's cases finish", id, wf.Status)
	}
	var page bytes.Buffer // rendered whole first, so a failure is still a problem answer
	info := comparisonreport.Info{WorkflowID: id, Name: wf.Name.Get(), Status: wf.Status}
	if err := comparisonreport.RenderStored(&page, wf.Report.Raw(), info); err != nil {
		return err
	}
	attachment(w, "text/html; charset=utf-8", id+"-report.html")
	w.Header().Set("Content-Security-Policy", reportCSP)
	_, _ = w.Write(page.Bytes())
	return nil
}

func deploymentStatus(c *workflow.Case) string {
	if s := c.DeploymentStatus.Get(); s != "" {
		return s
	}
	return "deploying"
}

func (a *API) retryWorkflow(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	current, _, err := a.loadWorkflow(ctx, id)
	if err != nil {
		return err
	}
	if err := a.checkWorkflowOwner(ctx, current); err != nil {
		return err
	}
	wf, err := a.workflows.Update(ctx, id, func(cur *workflow.Workflow) error {
		if workflow.Terminal(cur.Status) && !cur.Simple() && cur.Cases != nil {
			// Rebind to the cluster's active session (409 when it has none).
			session, err := a.activeSessionOf(ctx, cur)
			if err != nil {
				return err
			}
			cur.ClusterSessionID = rawjson.Some(session.ID)
		}
		return cur.Retry(func(c *workflow.Case) bool { return a.readyExecution(ctx, c) }, func(c *workflow.Case) error { return a.reproducible(ctx, c) })
	})
	if err != nil {
		return err
	}
	a.wake(ctx, id)
	fn.WriteJSON(w, http.StatusAccepted, wf)
	return nil
}

func (a *API) activeSessionOf(ctx context.Context, wf *workflow.Workflow) (inventory.Session, error) {
	if s, err := a.inv.ActiveSession(ctx, wf.ClusterSessionID.Get()); err == nil {
		return s, nil
	}
	c, err := a.inv.Cluster(ctx, wf.ClusterID.Get())
	if err != nil || c.SessionID == "" {
		return inventory.Session{}, problem.New(problem.CodeConflict, "the workflow's cluster has no active session to retry on")
	}
	return a.inv.ActiveSession(ctx, c.SessionID)
}

// readyExecution reports whether the case's deployment is still up and ready.
func (a *API) readyExecution(ctx context.Context, c *workflow.Case) bool {
	exec := c.ExecutionID.Get()
	if exec == "" || c.SharesGuidePods() {
		return false
	}
	e, err := a.inv.Execution(ctx, exec)
	return err == nil && e.Status == "ready"
}

// reproducible checks that a case's configuration snapshot can still be deployed: a guide's
// artifact exists with the same checksum; a baseline's generated content still parses.
func (a *API) reproducible(ctx context.Context, c *workflow.Case) error {
	var snap struct {
		ProviderRef string          `json:"provider_ref"`
		Checksum    string          `json:"checksum"`
		Content     json.RawMessage `json:"content"`
	}
	if c.SharesGuidePods() || !workflow.Decode(c.DeploymentConfiguration, &snap) {
		return nil
	}
	if id := c.ConfigurationArtifactID.Get(); id != "" {
		cfg, err := a.inv.Configuration(ctx, id)
		if err != nil || cfg.Checksum != snap.Checksum {
			return problem.New(problem.CodeConflict, "case %s: configuration %s can no longer be reproduced", c.ID, id)
		}
		return nil
	}
	if _, err := deployconfig.Parse(snap.ProviderRef, snap.Content); err != nil {
		return problem.New(problem.CodeConflict, "case %s: its baseline configuration can no longer be deployed: %v", c.ID, err)
	}
	return nil
}

func (a *API) cancelWorkflow(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	current, _, err := a.loadWorkflow(ctx, id)
	if err != nil {
		return err
	}
	if err := a.checkWorkflowOwner(ctx, current); err != nil {
		return err
	}
	wf, err := a.workflows.Update(ctx, id, func(cur *workflow.Workflow) error {
		switch s := cur.Status; {
		case s == workflow.StatusCancelled:
			return workflow.ErrUnchanged
		case workflow.Terminal(s):
			return problem.New(problem.CodeConflict, "workflow %s is %s; only an active workflow can be cancelled", id, s)
		}
		cur.Status = workflow.StatusCancelling
		cur.CancellationError = rawjson.Opt[string]{}
		for _, c := range cur.AllCases() {
			c.CancelRequested = rawjson.Some(true)
			if !workflow.CaseTerminal(c.Status) {
				c.Status = workflow.CaseCancelling
			}
			if c.CleanupError.Present() && c.CleanupStatus.Get() == "failed" {
				c.CleanupStatus = rawjson.Some("retry") // a retried cancel retries the cleanup
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if wf.Status == workflow.StatusCancelled {
		fn.WriteJSON(w, http.StatusOK, CancelResponse{ID: id, Status: workflow.StatusCancelled})
		return nil
	}
	a.wake(ctx, id)
	wf = a.waitWorkflow(ctx, id, func(wf *workflow.Workflow) bool {
		return workflow.Terminal(wf.Status) || wf.CancellationError.Get() != ""
	})
	if msg := wf.CancellationError.Get(); msg != "" {
		return problem.New(problem.CodeConflict, "workflow %s: deployment cleanup failed and must be retried (cancel again): %s", id, msg)
	}
	fn.WriteJSON(w, http.StatusOK, CancelResponse{ID: id, Status: wf.Status})
	return nil
}

// CancelTargets are the case and, transitively, the cases linked to it: those depending on a
// target guide, the guide a target depends on, and the cases sharing an owned deployment.
func CancelTargets(wf *workflow.Workflow, caseID string) map[string]bool {
	targets := map[string]bool{caseID: true}
	for changed := true; changed; {
		changed = false
		for _, c := range wf.AllCases() {
			if targets[c.ID] {
				continue
			}
			linked := targets[c.DependentGuideCaseID.Get()]
			for id := range targets {
				t := wf.Case(id)
				if t == nil {
					continue
				}
				if t.DependentGuideCaseID.Get() == c.ID ||
					(!c.SharesGuidePods() && !t.SharesGuidePods() && c.DeploymentRunID.Get() != "" && c.DeploymentRunID.Get() == t.DeploymentRunID.Get()) {
					linked = true
				}
			}
			if linked {
				targets[c.ID] = true
				changed = true
			}
		}
	}
	return targets
}

func (a *API) cancelCase(w http.ResponseWriter, r *http.Request) error {
	res, err := a.cancelWorkflowCase(r.Context(), r.PathValue("id"), r.PathValue("case_id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, res)
	return nil
}

// cancelWorkflowCase cancels a case and the cases linked to it (the route, and a standalone
// cancel of a run a case owns).
func (a *API) cancelWorkflowCase(ctx context.Context, id, caseID string) (CancelResponse, error) {
	wf, _, err := a.loadWorkflow(ctx, id)
	if err != nil {
		return CancelResponse{}, err
	}
	if err := a.checkWorkflowOwner(ctx, wf); err != nil {
		return CancelResponse{}, err
	}
	if wf.Simple() || wf.Case(caseID) == nil {
		return CancelResponse{}, problem.New(problem.CodeNotFound, "workflow %s has no case %s", id, caseID)
	}
	_, err = a.workflows.Update(ctx, id, func(cur *workflow.Workflow) error {
		c := cur.Case(caseID)
		if c.Status == workflow.CaseCancelled {
			return workflow.ErrUnchanged
		}
		if workflow.Terminal(cur.Status) {
			return problem.New(problem.CodeConflict, "workflow %s is %s; its cases can no longer be cancelled", id, cur.Status)
		}
		if workflow.CaseTerminal(c.Status) {
			return problem.New(problem.CodeConflict, "case %s is %s; only an active case can be cancelled", caseID, c.Status)
		}
		for target := range CancelTargets(cur, caseID) {
			t := cur.Case(target)
			t.CancelRequested = rawjson.Some(true)
			if !workflow.CaseTerminal(t.Status) {
				t.Status = workflow.CaseCancelling
			}
		}
		return nil
	})
	if err != nil {
		return CancelResponse{}, err
	}
	a.wake(ctx, id)
	wf = a.waitWorkflow(ctx, id, func(wf *workflow.Workflow) bool {
		c := wf.Case(caseID)
		return c == nil || workflow.CaseTerminal(c.Status) || c.CleanupStatus.Get() == "failed"
	})
	c := wf.Case(caseID)
	if c != nil && c.CleanupStatus.Get() == "failed" && c.Status != workflow.CaseCancelled {
		return CancelResponse{}, problem.New(problem.CodeConflict, "case %s: deployment cleanup failed and must be retried (cancel again): %s", caseID, c.CleanupError.Get())
	}
	status := workflow.CaseCancelling
	if c != nil {
		status = c.Status
	}
	return CancelResponse{ID: caseID, Status: status}, nil
}

// owningCase returns the workflow and case that own a run ("" when it is standalone or its
// workflow is gone).
func (a *API) owningCase(ctx context.Context, run *evalrun.Run) (string, string) {
	id, caseID := evalrun.Str(run.EvaluationWorkflow), evalrun.Str(run.EvaluationCase)
	if id == "" {
		return "", ""
	}
	if _, _, err := a.workflows.Get(ctx, id); err != nil {
		return "", ""
	}
	return id, caseID
}

// waitWorkflow polls the record until done says so or workflowWait passed.
func (a *API) waitWorkflow(ctx context.Context, id string, done func(*workflow.Workflow) bool) *workflow.Workflow {
	deadline := time.Now().Add(a.workflowWait)
	var last *workflow.Workflow
	for {
		wf, _, err := a.workflows.Get(ctx, id)
		if err == nil {
			last = wf
			if done(wf) {
				return wf
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if last == nil {
				last = workflow.New(workflow.KindEvaluation, id, workflow.StatusCancelling)
			}
			return last
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cleanupInFlight reports whether a case's deployment cleanup was requested and not answered.
func cleanupInFlight(wf *workflow.Workflow) bool {
	for _, c := range wf.AllCases() {
		if s := c.CleanupStatus.Get(); s == "requested" || s == "retry" {
			return true
		}
	}
	return false
}

func (a *API) deleteWorkflow(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	wf, _, err := a.loadWorkflow(ctx, id)
	if err != nil {
		return err
	}
	if err := a.checkWorkflowOwner(ctx, wf); err != nil {
		return err
	}
	if !workflow.Terminal(wf.Status) {
		return problem.New(problem.CodeConflict, "workflow %s is %s; cancel it and wait until it ends before deleting it", id, wf.Status)
	}
	// Deleting waits for the in-flight cleanup of a finished workflow before removing history.
	wf = a.waitWorkflow(ctx, id, func(wf *workflow.Workflow) bool { return !cleanupInFlight(wf) })
	if cleanupInFlight(wf) {
		return problem.New(problem.CodeConflict, "workflow %s is still cleaning up its deployments; try again shortly", id)
	}
	_, version, err := a.loadWorkflow(ctx, id)
	if err != nil {
		return err
	}
	for _, runID := range wf.RunIDs() {
		rec, err := a.deps.Store.Get(ctx, evalrun.Kind, runID)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if !evalrun.Terminal(rec.Status) {
			return problem.New(problem.CodeConflict, "workflow %s still has benchmark run %s %s; try again shortly", id, runID, rec.Status)
		}
		if err := a.runs.Delete(ctx, runID, 0); err != nil && !errors.Is(err, state.ErrNotFound) {
			return err
		}
	}
	if err := a.workflows.Delete(ctx, id, version); err != nil {
		if errors.Is(err, state.ErrVersionConflict) {
			return problem.New(problem.CodeConflict, "workflow %s changed while it was being deleted; try again", id)
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// onEvaluationRequested creates an evaluation from a user's event exactly as POST /evaluations
// does, its id derived from the idempotency key, so every delivery of a key makes one workflow.
func (a *API) onEvaluationRequested(ctx context.Context, e cloudevent.Event) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(e.Data, &fields); err != nil || fields == nil {
		return cloudevent.Permanent(fmt.Errorf("evaluation.requested data is not a JSON object"))
	}
	var key string
	if err := json.Unmarshal(fields["idempotency_key"], &key); err != nil || key == "" || len(key) > evalrun.MaxIdempotencyKeyLen {
		return cloudevent.Permanent(fmt.Errorf("evaluation.requested needs an idempotency_key of 1-%d characters", evalrun.MaxIdempotencyKeyLen))
	}
	delete(fields, "idempotency_key")
	body, _ := json.Marshal(fields)
	sum := sha256.Sum256([]byte("lensfn/evaluation/evaluation.requested\x00" + key))
	id := uuidFrom(sum[:16])
	_, err := a.evaluation(ctx, body, key, id)
	switch {
	case err == nil:
		a.workflowsCreated.WithLabelValues("evaluation", "event").Inc()
		a.deps.Log.Infow("evaluation created from evaluation.requested", "workflow", id, "event", e.ID)
		return nil
	case errors.Is(err, state.ErrExists):
		return nil // an earlier event with this key created it
	case problem.CodeOf(err).Status() < 500 && problem.CodeOf(err) != problem.CodeTooManyRequest:
		// Every 409 on this path is the request's own (the P/D budget rule, an unsupported
		// kubernetes-service baseline, a closed session): no redelivery changes it.
		a.deps.Log.Warnw("evaluation.requested rejected", "event", e.ID, "error", err)
		return cloudevent.Permanent(problem.Wrap(problem.CodeBadRequest, err, err.Error()))
	}
	return err
}
