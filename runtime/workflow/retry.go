package workflow

import (
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
)

// clearLinks unties a case from its deployment and its benchmark: the ids become null, the
// rest leaves the document.
func clearLinks(c *Case) {
	clearRun(c)
	c.DeploymentRunID, c.ExecutionID = rawjson.Null[string](), rawjson.Null[string]()
	c.DeploymentCaseID, c.Namespace, c.Endpoint, c.BaselineURL = rawjson.Opt[string]{}, rawjson.Opt[string]{}, rawjson.Opt[string]{}, rawjson.Opt[string]{}
	c.DeploymentStatus, c.CleanupStatus, c.CleanupError = rawjson.Opt[string]{}, rawjson.Opt[string]{}, rawjson.Opt[string]{}
}

// clearRun unties a case from its benchmark only.
func clearRun(c *Case) {
	c.Error, c.EvaluationRunID = rawjson.Null[string](), rawjson.Null[string]()
	c.FailedStage, c.StartedAt, c.FinishedAt = rawjson.Opt[string]{}, rawjson.Opt[string]{}, rawjson.Opt[string]{}
	c.Metrics = nil
}

// Retry resets a failed or cancelled evaluation for another attempt, by the rules of
// lens-evaluation.md §3: succeeded cases are kept; a case whose deployment is still ready goes
// back to benchmarking on it; a kubernetes-service baseline whose guide has no ready deployment
// takes its guide back to queued with it; every other case is queued afresh, which needs its
// configuration to be reproducible. ready says whether a case's deployment is still ready;
// reproducible checks a case's configuration snapshot. Anything else is a 409.
func (w *Workflow) Retry(ready func(*Case) bool, reproducible func(*Case) error) error {
	if w.Simple() || w.Cases == nil {
		return problem.New(problem.CodeConflict, "workflow %s has no cases; only a multi-configuration evaluation can be retried", w.ID)
	}
	if s := w.Status; s != StatusFailed && s != StatusCancelled {
		return problem.New(problem.CodeConflict, "workflow %s is %s; only a failed or cancelled evaluation can be retried", w.ID, s)
	}
	for _, c := range w.AllCases() {
		c.CancelRequested = rawjson.Opt[bool]{}
	}
	requeue := func(c *Case) error {
		if c.Status == CaseQueued && !c.ExecutionID.Present() {
			return nil
		}
		if err := reproducible(c); err != nil {
			return err
		}
		clearLinks(c)
		c.Status = CaseQueued
		bumpAttempt(c)
		return nil
	}
	for _, c := range w.AllCases() {
		if !c.SharesGuidePods() || c.Status == CaseSucceeded {
			continue
		}
		if g := w.Case(c.DependentGuideCaseID.Get()); g != nil && !ready(g) {
			if err := requeue(g); err != nil {
				return err
			}
		}
	}
	for _, c := range w.AllCases() {
		switch {
		case c.Status == CaseSucceeded:
		case c.SharesGuidePods():
			clearRun(c)
			c.ExecutionID, c.Namespace, c.Endpoint = rawjson.Null[string](), rawjson.Opt[string]{}, rawjson.Opt[string]{}
			c.Status = CaseQueued
			bumpAttempt(c)
		case c.ExecutionID.Present() && ready(c):
			clearRun(c)
			c.Status = CaseBenchmarking
			bumpAttempt(c)
		default:
			if err := requeue(c); err != nil {
				return err
			}
		}
	}
	w.Status = StatusQueued
	w.Error = rawjson.Null[string]()
	w.Report = ReportJSON("null")
	w.FinishedAt, w.FailedStage, w.CancellationError = rawjson.Opt[string]{}, rawjson.Opt[string]{}, rawjson.Opt[string]{}
	w.Internal.FinishedAnnounced, w.Internal.FinishedClaimedAt = false, ""
	return nil
}

func bumpAttempt(c *Case) { c.Attempt = rawjson.Some(c.Attempt.Get() + 1) }
