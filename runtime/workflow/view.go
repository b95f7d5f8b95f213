package workflow

import (
	"encoding/json"

	"github.com/lensfn/lensfn/runtime/comparison"
)

// View lists the fields of a workflow's public document (EvaluationWorkflowResponse), as the
// API answers it. The record itself stays raw (Doc) so that a read-modify-write keeps every
// stored field; View is what the evaluation API's OpenAPI schema is generated from, and
// tests/openapi checks real answers against that schema (additionalProperties false), so a
// field the record gains and View lacks fails there. Nested blocks the API writes as they
// were given (plans, benchmarks, configurations) are any JSON.
type View struct {
	Kind                   string                     `json:"kind" doc:"always workflow"`
	ID                     string                     `json:"id"`
	Status                 string                     `json:"status" doc:"lens-evaluation.md §3"`
	CreatedAt              string                     `json:"created_at" doc:"RFC 3339 UTC"`
	Name                   *string                    `json:"name,omitempty" doc:"an evaluation's display name"`
	OwnerUserID            *string                    `json:"owner_user_id,omitempty"`
	OwnerBackendID         *string                    `json:"owner_backend_id,omitempty" doc:"the backend (LENS_BACKEND_ID) that created the workflow; absent for the unnamed one"`
	ClusterID              *string                    `json:"cluster_id,omitempty"`
	ClusterSessionID       *string                    `json:"cluster_session_id,omitempty"`
	Model                  *string                    `json:"model,omitempty" doc:"a simple workflow's model"`
	Harness                *string                    `json:"harness,omitempty" doc:"a simple workflow's harness"`
	Workload               *string                    `json:"workload,omitempty" doc:"a simple workflow's workload"`
	Parallelism            *int                       `json:"parallelism,omitempty" doc:"a simple workflow's parallelism"`
	Repetitions            *int                       `json:"repetitions,omitempty" doc:"a simple workflow's repetitions; an evaluation's default for cases whose benchmark sets none"`
	DeploymentOwnership    *string                    `json:"deployment_ownership,omitempty" doc:"evaluation or existing-endpoint"`
	DeploymentRunID        *string                    `json:"deployment_run_id,omitempty" doc:"a simple workflow's deployment execution"`
	DeploymentSource       json.RawMessage            `json:"deployment_source,omitempty"`
	EvaluationRunID        *string                    `json:"evaluation_run_id,omitempty" doc:"a simple workflow's benchmark run"`
	Endpoint               *string                    `json:"endpoint,omitempty" doc:"a simple workflow's benchmarked endpoint"`
	Metrics                json.RawMessage            `json:"metrics,omitempty" doc:"a simple workflow's benchmark metrics"`
	Runtime                json.RawMessage            `json:"runtime,omitempty" doc:"proxy settings, recorded"`
	BenchmarkRuntime       json.RawMessage            `json:"benchmark_runtime,omitempty"`
	BenchmarkPlans         []json.RawMessage          `json:"benchmark_plans,omitempty" doc:"an evaluation's plans as requested"`
	CompareConfigurations  *bool                      `json:"compare_configurations,omitempty"`
	ConfigurationArtifacts map[string]json.RawMessage `json:"configuration_artifacts,omitempty" doc:"configuration artifact id -> checksum"`
	Cases                  []CaseView                 `json:"cases,omitempty" doc:"an evaluation's cases in execution order"`
	Report                 *comparison.Report         `json:"report,omitempty" doc:"the comparison report, null until the evaluation has one"`
	StartedAt              *string                    `json:"started_at,omitempty"`
	FinishedAt             *string                    `json:"finished_at,omitempty"`
	Error                  *string                    `json:"error,omitempty" doc:"why it failed"`
	FailedStage            *string                    `json:"failed_stage,omitempty"`
	CancellationError      *string                    `json:"cancellation_error,omitempty" doc:"why a cancel's cleanup failed"`
}

// CaseView lists the fields of one case of an evaluation's public document (see View).
type CaseView struct {
	ID                      string            `json:"id" doc:"guide-<n> or baseline-<n>"`
	Kind                    string            `json:"kind" doc:"guide or baseline"`
	Status                  string            `json:"status"`
	BaselineType            *string           `json:"baseline_type,omitempty" doc:"a baseline's type"`
	BaselineParameters      json.RawMessage   `json:"baseline_parameters,omitempty"`
	CustomParameters        json.RawMessage   `json:"custom_parameters,omitempty"`
	BaselineCaseID          *string           `json:"baseline_case_id,omitempty"`
	BaselineCaseIDs         []string          `json:"baseline_case_ids,omitempty" doc:"a guide's baselines"`
	DependentGuideCaseID    *string           `json:"dependent_guide_case_id,omitempty" doc:"a kubernetes-service baseline's guide"`
	BenchmarkPlanID         *string           `json:"benchmark_plan_id,omitempty"`
	WorkloadIDs             []string          `json:"workload_ids,omitempty"`
	ScenarioID              *string           `json:"scenario_id,omitempty"`
	ScenarioName            *string           `json:"scenario_name,omitempty"`
	Benchmark               json.RawMessage   `json:"benchmark,omitempty"`
	SLATargets              json.RawMessage   `json:"sla_targets,omitempty"`
	ConfigurationArtifactID *string           `json:"configuration_artifact_id,omitempty"`
	DeploymentConfiguration json.RawMessage   `json:"deployment_configuration,omitempty" doc:"the configuration the case deploys (content, provenance)"`
	Configuration           json.RawMessage   `json:"configuration,omitempty" doc:"the case's configuration facts (in lists)"`
	Provider                *string           `json:"provider,omitempty"`
	ProviderRef             *string           `json:"provider_ref,omitempty"`
	Model                   *string           `json:"model,omitempty"`
	DeploymentGroupID       *string           `json:"deployment_group_id,omitempty"`
	DeploymentName          *string           `json:"deployment_name,omitempty"`
	DeploymentRunID         *string           `json:"deployment_run_id,omitempty"`
	DeploymentStatus        *string           `json:"deployment_status,omitempty"`
	DeploymentError         *string           `json:"deployment_error,omitempty"`
	PreserveDeployment      *bool             `json:"preserve_deployment,omitempty"`
	ExecutionID             *string           `json:"execution_id,omitempty"`
	Namespace               *string           `json:"namespace,omitempty"`
	Endpoint                *string           `json:"endpoint,omitempty"`
	ReplicaEndpoints        []json.RawMessage `json:"replica_endpoints,omitempty"`
	BaselineURL             *string           `json:"baseline_url,omitempty"`
	EvaluationRunID         *string           `json:"evaluation_run_id,omitempty"`
	Metrics                 json.RawMessage   `json:"metrics,omitempty"`
	RepetitionResults       json.RawMessage   `json:"repetition_results,omitempty" doc:"the run's repetitions' headline metrics (left out of lists)"`
	Bootstrap               json.RawMessage   `json:"bootstrap,omitempty" doc:"the run's bootstrap replicates (left out of lists)"`
	Attempt                 *int              `json:"attempt,omitempty" doc:"retries of the case so far"`
	CancelRequested         *bool             `json:"cancel_requested,omitempty"`
	CleanupStatus           *string           `json:"cleanup_status,omitempty"`
	CleanupError            *string           `json:"cleanup_error,omitempty"`
	Error                   *string           `json:"error,omitempty"`
}
