package workflow

import (
	"github.com/lensfn/lensfn/runtime/problem"
)

// linkFields are what ties a case to a deployment and a benchmark.
var linkFields = []string{"error", "failed_stage", "deployment_run_id", "evaluation_run_id", "deployment_case_id", "execution_id",
	"namespace", "endpoint", "baseline_url", "deployment_status", "cleanup_status", "cleanup_error", "metrics",
	"started_at", "finished_at"}

// runFields are what ties a case to its benchmark only.
var runFields = []string{"error", "failed_stage", "evaluation_run_id", "metrics", "started_at", "finished_at"}

func clearFields(c *Case, fields []string) {
	for _, f := range fields {
		if f == "error" || f == "deployment_run_id" || f == "evaluation_run_id" || f == "execution_id" {
			c.Set(f, nil)
			continue
		}
		c.Remove(f)
	}
}

// Retry resets a failed or cancelled evaluation for another attempt, by the rules of
// lens-evaluation.md §3: succeeded cases are kept; a case whose deployment is still ready goes
// back to benchmarking on it; a kubernetes-service baseline whose guide has no ready deployment
// takes its guide back to queued with it; every other case is queued afresh, which needs its
// configuration to be reproducible. ready says whether a case's deployment is still ready;
// reproducible checks a case's configuration snapshot. Anything else is a 409.
func (w *Workflow) Retry(ready func(*Case) bool, reproducible func(*Case) error) error {
	if w.Simple() || w.Cases() == nil {
		return problem.New(problem.CodeConflict, "workflow %s has no cases; only a multi-configuration evaluation can be retried", w.ID())
	}
	if s := w.Status(); s != StatusFailed && s != StatusCancelled {
		return problem.New(problem.CodeConflict, "workflow %s is %s; only a failed or cancelled evaluation can be retried", w.ID(), s)
	}
	for _, c := range w.Cases() {
		c.Remove("cancel_requested")
	}
	requeue := func(c *Case) error {
		if c.Status() == CaseQueued && !c.Has("execution_id") {
			return nil
		}
		if err := reproducible(c); err != nil {
			return err
		}
		clearFields(c, linkFields)
		c.Set("status", CaseQueued)
		bumpAttempt(c)
		return nil
	}
	for _, c := range w.Cases() {
		if !c.SharesGuidePods() || c.Status() == CaseSucceeded {
			continue
		}
		if g := w.Case(c.String("dependent_guide_case_id")); g != nil && !ready(g) {
			if err := requeue(g); err != nil {
				return err
			}
		}
	}
	for _, c := range w.Cases() {
		switch {
		case c.Status() == CaseSucceeded:
		case c.SharesGuidePods():
			clearFields(c, []string{"error", "failed_stage", "evaluation_run_id", "execution_id", "namespace", "endpoint", "metrics",
				"started_at", "finished_at"})
			c.Set("status", CaseQueued)
			bumpAttempt(c)
		case c.Has("execution_id") && ready(c):
			clearFields(c, runFields)
			c.Set("status", CaseBenchmarking)
			bumpAttempt(c)
		default:
			if err := requeue(c); err != nil {
				return err
			}
		}
	}
	w.Set("status", StatusQueued)
	w.Set("error", nil)
	w.Set("report", nil)
	w.Remove("finished_at")
	w.Remove("failed_stage")
	w.Remove("cancellation_error")
	w.Internal.FinishedAnnounced, w.Internal.FinishedClaimedAt = false, ""
	return nil
}

// Attempt is how many times the case was reset (0 for the first attempt); run ids derive from it.
func (c *Case) Attempt() int {
	var n int
	c.Get("attempt", &n)
	return n
}

func bumpAttempt(c *Case) { c.Set("attempt", c.Attempt()+1) }
