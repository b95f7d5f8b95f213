package workflow

import (
	"encoding/json"
	"fmt"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
)

// SimpleCaseID is the id of a simple workflow's single (hidden) case.
const SimpleCaseID = "deployment"

// SimpleRequest is the body of POST /api/v1/evaluate/workflow-runs (EvaluateWorkflowRequest).
type SimpleRequest struct {
	Model              string  `json:"model"`
	ClusterSessionID   string  `json:"cluster_session_id"`
	Replicas           *int    `json:"replicas,omitempty"`
	TensorParallelSize *int    `json:"tensor_parallel_size,omitempty"`
	Image              *string `json:"image,omitempty"`
	Harness            *string `json:"harness,omitempty"`
	Workload           *string `json:"workload,omitempty"`
	Parallelism        *int    `json:"parallelism,omitempty"`
	Repetitions        *int    `json:"repetitions,omitempty"`
}

// ParseSimple decodes and checks a POST /workflow-runs body (422 for the schema, 400 for an
// unknown harness or workload).
func ParseSimple(body []byte) (SimpleRequest, error) {
	var req SimpleRequest
	if err := problem.DecodeStrict(body, &req); err != nil {
		return req, err
	}
	var fe fieldErrors
	if req.Model == "" || len(req.Model) > deployconfig.MaxNameLength {
		fe.add(fmt.Sprintf("must be 1-%d characters", deployconfig.MaxNameLength), "model")
	}
	if req.ClusterSessionID == "" || len(req.ClusterSessionID) > 128 {
		fe.add("must be 1-128 characters", "cluster_session_id")
	}
	fe.intRange(req.Replicas, 1, deployconfig.MaxReplicas, "replicas")
	fe.intRange(req.TensorParallelSize, 1, deployconfig.MaxTensorParallel, "tensor_parallel_size")
	fe.intRange(req.Repetitions, 1, evalrun.MaxRepetitions, "repetitions")
	if req.Image != nil && len(*req.Image) > deployconfig.MaxImageLength {
		fe.add(fmt.Sprintf("at most %d characters", deployconfig.MaxImageLength), "image")
	}
	if len(fe) > 0 {
		return req, problem.Validation(fe...)
	}
	return req, evalrun.ValidateSpec(req.Spec())
}

// Spec is the benchmark the simple workflow runs.
func (r SimpleRequest) Spec() events.BenchmarkSpec {
	return events.BenchmarkSpec{Harness: r.Harness, Workload: r.Workload, Parallelism: r.Parallelism, Repetitions: r.Repetitions}
}

// Content is the optimized-baseline configuration the simple workflow deploys.
func (r SimpleRequest) Content() json.RawMessage {
	decode := map[string]int{"replicas": 1, "tensor_parallel_size": 1}
	if r.Replicas != nil {
		decode["replicas"] = *r.Replicas
	}
	if r.TensorParallelSize != nil {
		decode["tensor_parallel_size"] = *r.TensorParallelSize
	}
	content := map[string]any{"model": map[string]string{"name": r.Model}, "decode": decode}
	if r.Image != nil && *r.Image != "" {
		content["runtime"] = map[string]string{"image": *r.Image}
	}
	raw, _ := marshal(content)
	return raw
}

// NewSimple builds a simple workflow, status deploying, whose case deploys configurationID as
// executionID and then benchmarks it.
func NewSimple(id string, req SimpleRequest, clusterID, configurationID, executionID string) *Workflow {
	w := New(KindSimple, id, StatusDeploying)
	d := evalrun.WithDefaults(req.Spec())
	w.DeploymentOwnership = rawjson.Some(OwnershipEvaluation)
	w.CreatedAt = evalrun.Now()
	w.DeploymentRunID = rawjson.Some(executionID)
	w.ClusterSessionID = rawjson.Some(req.ClusterSessionID)
	w.ClusterID = rawjson.Some(clusterID)
	w.Model = rawjson.Some(req.Model)
	w.Harness, w.Workload = rawjson.Some(*d.Harness), rawjson.Some(*d.Workload)
	w.Parallelism, w.Repetitions = rawjson.Some(*d.Parallelism), rawjson.Some(*d.Repetitions)
	w.BenchmarkRuntime = json.RawMessage(`{}`)
	c := &Case{ID: SimpleCaseID, Kind: "guide", Status: CaseDeploying, ConfigurationArtifactID: rawjson.Some(configurationID),
		DeploymentRunID: rawjson.Some(executionID), ExecutionID: rawjson.Some(executionID), EvaluationRunID: rawjson.Null[string](),
		PreserveDeployment: rawjson.Some(false), Benchmark: benchmarkJSON(&events.BenchmarkSpec{Harness: d.Harness, Workload: d.Workload,
			Parallelism: d.Parallelism, Repetitions: d.Repetitions})}
	w.SetCases([]*Case{c})
	return w
}
