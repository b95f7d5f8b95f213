package evalrun

import (
	"encoding/json"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/livesummary"
)

// View lists the fields of a benchmark run's public document (BenchmarkRunResponse) as the API
// answers it. The record itself stays raw (Run) so that a read-modify-write keeps every stored
// field; View is what the evaluation API's OpenAPI schema is generated from. tests/openapi
// checks real answers against that schema (additionalProperties false), and that every field of
// events.EvaluateRunRequest but api_key (BuildRun copies the request's fields as sent) is one
// of View's, so neither a new record field nor a new request field can go undocumented.
// Blocks the runner writes as they come (metrics, results, monitoring) are any JSON.
type View struct {
	Kind      string `json:"kind" doc:"always benchmark"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at" doc:"RFC 3339 UTC"`

	// The request's fields as sent (the benchmark's own with their defaults filled in).
	DeploymentExecutionID *string                 `json:"deployment_execution_id,omitempty"`
	ModelServiceGroupID   *string                 `json:"model_service_group_id,omitempty"`
	ClusterSessionID      *string                 `json:"cluster_session_id,omitempty"`
	SLATargets            *events.SLATargets      `json:"sla_targets,omitempty"`
	SpecificationFile     *string                 `json:"specification_file,omitempty"`
	HTTPProxy             *string                 `json:"http_proxy,omitempty"`
	HTTPSProxy            *string                 `json:"https_proxy,omitempty"`
	NoProxy               *string                 `json:"no_proxy,omitempty"`
	BenchmarkSource       *events.BenchmarkSource `json:"benchmark_source,omitempty"`
	UseBaselineEndpoint   *bool                   `json:"use_baseline_endpoint,omitempty"`
	events.BenchmarkSpec

	// What the API adds when it queues the run.
	Benchmark           json.RawMessage `json:"benchmark,omitempty" doc:"the benchmark as asked, every key present, defaults filled in"`
	BenchmarkRuntime    json.RawMessage `json:"benchmark_runtime,omitempty"`
	Timing              *Timing         `json:"timing,omitempty" doc:"the timing estimate (left out of lists)"`
	ClusterID           *string         `json:"cluster_id,omitempty"`
	DeploymentOwnership *string         `json:"deployment_ownership,omitempty" doc:"existing-endpoint or evaluation"`
	Model               *string         `json:"model,omitempty"`
	Namespace           *string         `json:"namespace,omitempty"`
	Endpoint            *string         `json:"endpoint,omitempty"`
	EndpointKind        *string         `json:"endpoint_kind,omitempty"`
	EndpointUsed        *string         `json:"endpoint_used,omitempty"`
	Deployment          json.RawMessage `json:"deployment,omitempty" doc:"name, namespace and endpoint of the target"`
	DeploymentCases     json.RawMessage `json:"deployment_cases,omitempty"`
	DeploymentCaseID    *string         `json:"deployment_case_id,omitempty"`
	DeploymentRunID     *string         `json:"deployment_run_id,omitempty"`
	DeploymentConfig    json.RawMessage `json:"deployment_configuration,omitempty"`
	Configuration       json.RawMessage `json:"configuration,omitempty" doc:"the deployed configuration's facts, null when none"`
	Guide               *string         `json:"guide,omitempty"`
	OwnerUserID         *string         `json:"owner_user_id,omitempty"`
	OwnerBackendID      *string         `json:"owner_backend_id,omitempty" doc:"the backend (LENS_BACKEND_ID) that created the run; absent for the unnamed one"`
	EvaluationWorkflow  *string         `json:"evaluation_workflow_id,omitempty" doc:"the workflow that created the run"`
	EvaluationCase      *string         `json:"evaluation_case_id,omitempty" doc:"the workflow case that created the run"`

	// What the runner writes as the run goes.
	OwnerInstanceID    *string            `json:"owner_instance_id,omitempty" doc:"the runner instance that claimed the run"`
	OwnerPID           *int               `json:"owner_pid,omitempty"`
	HeartbeatAt        *string            `json:"heartbeat_at,omitempty"`
	StartedAt          *string            `json:"started_at,omitempty"`
	BenchmarkStartedAt *string            `json:"benchmark_started_at,omitempty"`
	Phase              *string            `json:"phase,omitempty"`
	PhaseStartedAt     *string            `json:"phase_started_at,omitempty"`
	ProgressPercent    *float64           `json:"progress_percent,omitempty"`
	ProgressMessage    *string            `json:"progress_message,omitempty"`
	LiveMetrics        *LiveMetrics       `json:"live_metrics,omitempty" doc:"while running"`
	Logs               []string           `json:"logs,omitempty" doc:"left out of lists"`
	LogsTruncated      *bool              `json:"logs_truncated,omitempty"`
	Warmup             json.RawMessage    `json:"warmup,omitempty"`
	Metrics            json.RawMessage    `json:"metrics,omitempty"`
	Partial            *bool              `json:"partial,omitempty" doc:"the metrics cover only the records a lost runner had written"`
	PartialReason      *string            `json:"partial_reason,omitempty"`
	MatrixResults      json.RawMessage    `json:"matrix_results,omitempty" doc:"left out of lists"`
	RateStageResults   json.RawMessage    `json:"rate_stage_results,omitempty" doc:"left out of lists"`
	RepetitionResults  json.RawMessage    `json:"repetition_results,omitempty" doc:"with repetitions: each repetition's headline metrics; left out of lists"`
	Bootstrap          *Bootstrap         `json:"bootstrap,omitempty" doc:"per repetition the request-level bootstrap replicates a comparison's confidence intervals come from; left out of lists"`
	CapacityAnalysis   json.RawMessage    `json:"capacity_analysis,omitempty"`
	Diagnostics        json.RawMessage    `json:"diagnostics,omitempty" doc:"evidence items (epp_readiness, kv_working_set, harness, hardware_profile, cluster), each available (cluster: or partial) or unavailable with why"`
	Monitoring         json.RawMessage    `json:"monitoring,omitempty"`
	ResourceSnapshot   json.RawMessage    `json:"resource_snapshot,omitempty"`
	SLA                *events.SLAVerdict `json:"sla,omitempty"`
	Artifacts          json.RawMessage    `json:"artifacts,omitempty"`
	Error              *string            `json:"error,omitempty"`
	FinishedAt         *string            `json:"finished_at,omitempty"`
	CleanupStatus      *string            `json:"cleanup_status,omitempty"`
}

// LiveMetrics is what a running run shows of itself (live_metrics): the benchmark-runner writes
// it every report interval and the API documents it from this type.
type LiveMetrics struct {
	Phase              string                `json:"phase"`
	PlannedRequests    int64                 `json:"planned_requests"`
	CompletedRequests  int64                 `json:"completed_requests"`
	SuccessfulRequests int64                 `json:"successful_requests"`
	FailedRequests     int64                 `json:"failed_requests"`
	InFlightRequests   int64                 `json:"in_flight_requests"`
	ElapsedSeconds     float64               `json:"elapsed_seconds"`
	Summary            *livesummary.Snapshot `json:"summary,omitempty" doc:"percentiles, throughput and error causes of the measured requests so far"`
}
