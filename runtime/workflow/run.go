package workflow

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/rawjson"
)

// Endpoint kinds a case benchmarks.
const (
	EndpointRouted            = "deployment"
	EndpointKubernetesService = "kubernetes-service"
)

// RunID is the benchmark run of a case's attempt: a name-based UUID, so a repeated creation
// (a redelivered event, a sweep after a crash) names the same run.
func RunID(workflowID, caseID string, attempt int) string {
	sum := sha256.Sum256([]byte("lensfn/evaluation/workflow-run\x00" + workflowID + "\x00" + caseID + "\x00" + strconv.Itoa(attempt)))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NewRun builds the queued benchmark run of a case, exactly as POST /runs would for its
// deployment execution, linked back to the workflow and case. The case's benchmark block
// may carry baseline_type and baseline_parameters, which a run's spec has no place for.
func (w *Workflow) NewRun(c *Case, target evalrun.Target) (*evalrun.Run, error) {
	var spec events.BenchmarkSpec
	if raw := c.Benchmark; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &spec); err != nil {
			return nil, fmt.Errorf("workflow: case %s has no readable benchmark: %w", c.ID, err)
		}
	}
	req := events.EvaluateRunRequest{DeploymentExecutionID: &target.ExecutionID, BenchmarkSpec: spec}
	var sla events.SLATargets
	if len(c.SLATargets) > 0 && string(c.SLATargets) != "null" && json.Unmarshal(c.SLATargets, &sla) == nil {
		req.SLATargets = &sla
	}
	raw := map[string]json.RawMessage{"deployment_execution_id": mustJSON(target.ExecutionID)}
	specRaw, _ := json.Marshal(spec)
	var specFields map[string]json.RawMessage
	_ = json.Unmarshal(specRaw, &specFields)
	for k, v := range specFields {
		raw[k] = v
	}
	if req.SLATargets != nil {
		raw["sla_targets"] = mustJSON(req.SLATargets)
	}
	if err := evalrun.ValidateRequest(req); err != nil {
		return nil, err
	}
	run := evalrun.BuildRun(RunID(w.ID, c.ID, c.Attempt.Get()), req, raw, target)
	ownership, wfID, caseID := OwnershipEvaluation, w.ID, c.ID
	run.DeploymentOwnership, run.EvaluationWorkflow, run.EvaluationCase, run.DeploymentCaseID = &ownership, &wfID, &caseID, &caseID
	if w.OwnerUserID.Valid() {
		run.OwnerUserID = rawjson.Some(w.OwnerUserID.Get())
	} else {
		run.OwnerUserID = rawjson.Null[string]() // a workflow without an owner
	}
	// The configuration it benchmarks, as the case's facts say and as it was deployed.
	facts := w.Facts(c)
	run.Configuration = mustJSON(facts)
	if guide, ok := facts["guide"].(string); ok {
		run.Guide = rawjson.Some(guide)
	} else {
		run.Guide = rawjson.Null[string]()
	}
	if c.DeploymentConfiguration != nil {
		run.DeploymentConfig = c.DeploymentConfiguration
	}
	kind := EndpointRouted
	if c.SharesGuidePods() {
		baseline := true
		run.UseBaselineEndpoint, kind = &baseline, EndpointKubernetesService
	}
	run.EndpointKind = &kind
	return run, nil
}

func mustJSON(v any) json.RawMessage {
	raw, _ := marshal(v)
	return raw
}
