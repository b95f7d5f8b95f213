package workflow

import (
	"encoding/json"
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

// ResultField is the case's field that keeps the run result key names (one of RunResultFields;
// nil for another key).
func (c *Case) ResultField(key string) *json.RawMessage {
	switch key {
	case "metrics":
		return &c.Metrics
	case "sla":
		return &c.SLA
	case FieldMatrixResults:
		return &c.MatrixResults
	case FieldRateStageResults:
		return &c.RateStageResults
	case FieldBootstrap:
		return &c.Bootstrap
	case FieldRepetitionResults:
		return &c.RepetitionResults
	}
	return nil
}

// Decode decodes a raw block of a record into v; false when it is absent, null or of another shape.
func Decode(raw json.RawMessage, v any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// ReportCases are the evaluation's cases as runtime/comparison reads them.
func (w *Workflow) ReportCases() []comparison.Case {
	out := make([]comparison.Case, 0, len(w.Cases))
	for _, c := range w.AllCases() {
		rc := comparison.Case{ID: c.ID, Role: comparison.RoleBaseline, ScenarioID: c.ScenarioID.Get(),
			ScenarioName: c.ScenarioName.Get(), BaselineType: c.BaselineType.Get()}
		if c.IsGuide() {
			rc.Role = comparison.RoleGuide
			rc.BaselineCaseIDs = c.BaselineCaseIDs
		}
		if len(c.WorkloadIDs) > 0 {
			rc.WorkloadID = c.WorkloadIDs[0]
		}
		rc.Facts = comparison.FactsFrom(w.Facts(c))
		if rc.Facts.Guide != nil {
			rc.ProviderRef = *rc.Facts.Guide
		}
		Decode(c.Benchmark, &rc.Benchmark)
		rc.Metrics = map[string]any{}
		Decode(c.Metrics, &rc.Metrics)
		for _, key := range []string{FieldMatrixResults, FieldRateStageResults} {
			var v []any
			if Decode(*c.ResultField(key), &v) {
				rc.Metrics[key] = v
			}
		}
		Decode(c.SLATargets, &rc.SLATargets)
		var boot evalrun.Bootstrap
		if Decode(c.Bootstrap, &boot) && len(boot.Repetitions) > 0 {
			rc.Bootstrap = &boot
		}
		Decode(c.RepetitionResults, &rc.Repetitions)
		out = append(out, rc)
	}
	return out
}

// BuildReport makes the comparison v2 report of the evaluation's cases.
func (w *Workflow) BuildReport(now time.Time) comparison.Report {
	opts := comparison.Options{CompareConfigurations: true, Confidence: comparison.DefaultConfidence}
	if w.CompareConfigurations.Valid() {
		opts.CompareConfigurations = w.CompareConfigurations.Get()
	}
	if w.Confidence.Valid() {
		opts.Confidence = w.Confidence.Get()
	}
	return comparison.Build(w.ReportCases(), opts, now)
}

// SetReport stores a comparison report.
func (w *Workflow) SetReport(r comparison.Report) {
	raw, _ := marshal(r)
	w.Report = raw
}
