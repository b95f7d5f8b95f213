package workflow

import (
	"time"

	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/evalrun"
)

// Stage-result fields a succeeded case keeps beside its metrics, so the report can be rebuilt
// from the workflow alone.
const (
	FieldMatrixResults    = "matrix_results"
	FieldRateStageResults = "rate_stage_results"
	// FieldBootstrap is the run's bootstrap record (the comparison's confidence intervals) and
	// FieldRepetitionResults its repetitions' summaries (the SLA verdict per repetition).
	FieldBootstrap         = "bootstrap"
	FieldRepetitionResults = "repetition_results"
)

// RunResultFields are the fields a finished case copies from its run.
var RunResultFields = []string{"metrics", "sla", FieldMatrixResults, FieldRateStageResults, FieldBootstrap, FieldRepetitionResults}

// ReportCases are the evaluation's cases as runtime/comparison reads them.
func (w *Workflow) ReportCases() []comparison.Case {
	out := make([]comparison.Case, 0, len(w.Cases()))
	for _, c := range w.Cases() {
		rc := comparison.Case{ID: c.ID(), Role: comparison.RoleBaseline, ScenarioID: c.String("scenario_id"),
			ScenarioName: c.String("scenario_name"), BaselineType: c.BaselineType()}
		if c.IsGuide() {
			rc.Role = comparison.RoleGuide
			c.Get("baseline_case_ids", &rc.BaselineCaseIDs)
		}
		var workloads []string
		if c.Get("workload_ids", &workloads) && len(workloads) > 0 {
			rc.WorkloadID = workloads[0]
		}
		rc.Facts = comparison.FactsFrom(w.Facts(c))
		if rc.Facts.Guide != nil {
			rc.ProviderRef = *rc.Facts.Guide
		}
		c.Get("benchmark", &rc.Benchmark)
		rc.Metrics = map[string]any{}
		c.Get("metrics", &rc.Metrics)
		for _, key := range []string{FieldMatrixResults, FieldRateStageResults} {
			var v []any
			if c.Get(key, &v) {
				rc.Metrics[key] = v
			}
		}
		c.Get("sla_targets", &rc.SLATargets)
		var boot evalrun.Bootstrap
		if c.Get(FieldBootstrap, &boot) && len(boot.Repetitions) > 0 {
			rc.Bootstrap = &boot
		}
		c.Get(FieldRepetitionResults, &rc.Repetitions)
		out = append(out, rc)
	}
	return out
}

// BuildReport makes the comparison v2 report of the evaluation's cases.
func (w *Workflow) BuildReport(now time.Time) comparison.Report {
	compare := true
	w.Get("compare_configurations", &compare)
	return comparison.Build(w.ReportCases(), compare, now)
}
