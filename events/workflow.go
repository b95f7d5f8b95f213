package events

// Workflow event types: a deploy-benchmark-compare workflow's life on the Broker.
const (
	// TypeEvaluationRequested: a user (a CronJob, a CI system) asks for a multi-configuration
	// evaluation; the evaluation API creates it exactly as POST /api/v1/evaluate/evaluations does,
	// once per idempotency key.
	TypeEvaluationRequested = "dev.lensfn.evaluation.requested.v1"
	// TypeWorkflowQueued: a workflow has work for the orchestrator (it was created, retried or a
	// cancel was requested).
	TypeWorkflowQueued = "dev.lensfn.evaluation.workflow.queued.v1"
	// TypeWorkflowFinished: a workflow reached a terminal status.
	TypeWorkflowFinished = "dev.lensfn.evaluation.workflow.finished.v1"
)

// RuntimeSpec is an evaluation's proxy settings (recorded with the workflow and its runs).
type RuntimeSpec struct {
	HTTPProxy  *string `json:"http_proxy,omitempty" doc:"empty (else 422)"`
	HTTPSProxy *string `json:"https_proxy,omitempty" doc:"empty (else 422)"`
	NoProxy    *string `json:"no_proxy,omitempty" doc:"empty (else 422)"`
}

// ComparisonCoreParameters override a baseline's serving shape (all optional).
type ComparisonCoreParameters struct {
	Replicas             *int     `json:"replicas,omitempty" doc:"1-32; wins over the P/D budget rule"`
	TensorParallelSize   *int     `json:"tensor_parallel_size,omitempty" doc:"1-16; a TP-only override recalculates P/D-matched replicas"`
	MaxModelLen          *int     `json:"max_model_len,omitempty" doc:"1-1000000"`
	MaxNumSeqs           *int     `json:"max_num_seqs,omitempty" doc:"1-100000"`
	GPUMemoryUtilization *float64 `json:"gpu_memory_utilization,omitempty" doc:"0.1-1.0 (a vLLM argument)"`
	BlockSize            *int     `json:"block_size,omitempty" doc:"1-1024 (a vLLM argument; the simulator's block-size)"`
	MaxNumBatchedTokens  *int     `json:"max_num_batched_tokens,omitempty" doc:"1-1000000 (a vLLM argument)"`
}

// Scenario is one workload of a plan: its own benchmark (and SLA targets) against the same
// configuration.
type Scenario struct {
	ID         *string        `json:"id,omitempty" doc:"scenario id (default scenario-<n>)"`
	Name       *string        `json:"name,omitempty" doc:"display name"`
	Benchmark  *BenchmarkSpec `json:"benchmark,omitempty" doc:"the scenario's benchmark (default: the plan's)"`
	SLATargets *SLATargets    `json:"sla_targets,omitempty" doc:"the scenario's SLA targets (default: the plan's)"`
}

// BenchmarkPlan is one configuration of an evaluation with its baselines.
type BenchmarkPlan struct {
	ID                      *string                             `json:"id,omitempty" doc:"plan id (default plan-<n>); the workload id"`
	ConfigurationArtifactID string                              `json:"configuration_artifact_id" doc:"the deployable-configuration.v1 artifact evaluated"`
	DeploymentName          *string                             `json:"deployment_name,omitempty" doc:"display name of the deployment"`
	DeploymentDescription   *string                             `json:"deployment_description,omitempty" doc:"recorded"`
	Benchmark               *BenchmarkSpec                      `json:"benchmark,omitempty" doc:"what each case runs"`
	SLATargets              *SLATargets                         `json:"sla_targets,omitempty" doc:"checked against each guide case"`
	IncludeConfiguration    *bool                               `json:"include_configuration,omitempty" doc:"benchmark the configuration itself (default true)"`
	IncludeBaseline         *bool                               `json:"include_baseline,omitempty" doc:"add baselines (default true)"`
	BaselineType            *string                             `json:"baseline_type,omitempty" doc:"used when baseline_types is empty (default direct-vllm)"`
	BaselineTypes           []string                            `json:"baseline_types,omitempty" doc:"at most 7 of direct-vllm, router-neutral (router-round-robin), load-only, affinity-only, optimized-baseline, kubernetes-service"`
	BaselineParameters      map[string]ComparisonCoreParameters `json:"baseline_parameters,omitempty" doc:"per baseline type"`
	PreserveDeployment      *bool                               `json:"preserve_deployment,omitempty" doc:"keep the guide's deployment after the evaluation"`
	Scenarios               []Scenario                          `json:"scenarios,omitempty" doc:"at most 20 workloads; none: the plan's benchmark"`
}

// EvaluationCreateRequest is the body of POST /api/v1/evaluate/evaluations.
type EvaluationCreateRequest struct {
	Name                  *string          `json:"name,omitempty" doc:"display name (default Evaluation)"`
	ClusterSessionID      string           `json:"cluster_session_id" doc:"active session of the cluster the cases deploy on"`
	Runtime               *RuntimeSpec     `json:"runtime,omitempty" doc:"proxy settings: empty only (else 422)"`
	BenchmarkSource       *BenchmarkSource `json:"benchmark_source,omitempty" doc:"the defaults only (else 422)"`
	BenchmarkPlans        []BenchmarkPlan  `json:"benchmark_plans" doc:"1-20 plans"`
	CompareConfigurations *bool            `json:"compare_configurations,omitempty" doc:"add topology comparisons between guides of a scenario (default true)"`
	Repetitions           *int             `json:"repetitions,omitempty" doc:"repetitions of every case whose benchmark sets none, 1-20 (default 1)"`
	Confidence            *float64         `json:"confidence,omitempty" doc:"level of the comparisons' confidence intervals, each metric on its own, 0.8-0.999 (default 0.95)"`
}

// EvaluationRequested is the data of TypeEvaluationRequested: a POST /evaluations body plus an
// idempotency key.
type EvaluationRequested struct {
	IdempotencyKey string `json:"idempotency_key" doc:"1-200 characters; the same key always names the same workflow"`
	EvaluationCreateRequest
}

// WorkflowQueued is the data of TypeWorkflowQueued.
type WorkflowQueued struct {
	WorkflowID string `json:"workflow_id" doc:"the workflow"`
}

// WorkflowFinished is the data of TypeWorkflowFinished.
type WorkflowFinished struct {
	WorkflowID  string  `json:"workflow_id" doc:"the workflow"`
	Kind        string  `json:"kind" doc:"evaluation (with cases) or simple (deploy then benchmark)"`
	Status      string  `json:"status" doc:"succeeded, failed or cancelled"`
	Error       *string `json:"error" doc:"why it failed, null otherwise"`
	FailedStage *string `json:"failed_stage" doc:"the stage that failed, null otherwise"`
	FinishedAt  string  `json:"finished_at" doc:"RFC 3339 UTC"`
	CaseCount   int     `json:"case_count" doc:"cases of the workflow (0 for a simple workflow)"`
	Comparisons int     `json:"comparisons" doc:"entries of the report's comparisons"`
}
