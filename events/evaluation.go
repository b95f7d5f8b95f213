package events

// Evaluation event types: a benchmark run's life on the Broker.
const (
	// TypeRunRequested: a user (a PingSource, a CI system) asks for a benchmark run; the
	// evaluation API creates it exactly as POST /api/v1/evaluate/runs does, once per
	// idempotency key.
	TypeRunRequested = "dev.lensfn.evaluation.run.requested.v1"
	// TypeRunQueued: a benchmark run was stored queued and waits for a benchmark runner.
	TypeRunQueued = "dev.lensfn.evaluation.run.queued.v1"
	// TypeRunFinished: a benchmark run reached a terminal status.
	TypeRunFinished = "dev.lensfn.evaluation.run.finished.v1"
)

// Sources of the evaluation events.
const (
	SourceEvaluationAPI   = "/lensfn/evaluation-api"
	SourceBenchmarkRunner = "/lensfn/benchmark-runner"
	// SourceUser is the documented source of user-sent run.requested events (any /lensfn/
	// path is accepted; the idempotency key, not the source, deduplicates).
	SourceUser = "/lensfn/user"
)

// MatrixPoint is one input/output length pair of a matrix benchmark.
type MatrixPoint struct {
	ISL int `json:"isl" doc:"input tokens per request"`
	OSL int `json:"osl" doc:"output tokens per request"`
}

// ConcurrencyStage is one closed-loop stage: exactly Concurrency requests in flight until
// NumRequests completed.
type ConcurrencyStage struct {
	Concurrency int `json:"concurrency" doc:"requests in flight, 1-4096"`
	NumRequests int `json:"num_requests" doc:"requests the stage sends"`
}

// RateStage is one open-loop stage of a shared-prefix benchmark.
type RateStage struct {
	Rate     float64 `json:"rate" doc:"requests per second (Poisson arrivals), at most 10000"`
	Duration float64 `json:"duration" doc:"seconds"`
}

// SharedPrefix is a generated shared-prefix workload: groups of prompts sharing a system prompt.
type SharedPrefix struct {
	NumGroups           int         `json:"num_groups" doc:"distinct system prompts"`
	NumPromptsPerGroup  int         `json:"num_prompts_per_group" doc:"questions per system prompt"`
	SystemPromptLen     int         `json:"system_prompt_len" doc:"tokens of each system prompt"`
	QuestionLen         int         `json:"question_len" doc:"tokens of each question"`
	OutputLen           int         `json:"output_len" doc:"output tokens per request"`
	Stages              []RateStage `json:"stages" doc:"rate stages, run one after another"`
	EnableMultiTurnChat *bool       `json:"enable_multi_turn_chat,omitempty" doc:"multi-turn chat (inference-perf's key): each of the num_groups x num_prompts_per_group users holds a conversation whose every turn resends the earlier questions and the model's replies"`
	Seed                *int64      `json:"seed,omitempty" doc:"seed of the generated text"`
}

// SLATargets are a run's service-level targets; only the ones set are checked.
type SLATargets struct {
	TTFTMs                *float64 `json:"ttft_ms,omitempty" doc:"> 0 and <= 3600000"`
	TTFTPercentile        *string  `json:"ttft_percentile,omitempty" doc:"p50, p90, p95 or p99 (default p99)"`
	TPOTMs                *float64 `json:"tpot_ms,omitempty" doc:"> 0 and <= 3600000"`
	TPOTPercentile        *string  `json:"tpot_percentile,omitempty" doc:"p50, p90, p95 or p99 (default p99)"`
	ThroughputMinTPS      *float64 `json:"throughput_min_tps,omitempty" doc:">= 0 output tokens per second"`
	SuccessRateMinPercent *float64 `json:"success_rate_min_percent,omitempty" doc:"0-100"`
}

// BenchmarkSource names the benchmark repository and revision: only the defaults, whose
// workloads Lensfn ships, are accepted (nothing is fetched).
type BenchmarkSource struct {
	Repository *string `json:"repository,omitempty" doc:"repository URL"`
	Revision   *string `json:"revision,omitempty" doc:"branch, tag or commit"`
}

// BenchmarkSpec is what a benchmark runs: the body of POST /timing-estimate and a run's
// `benchmark` block. Absent fields take their defaults.
type BenchmarkSpec struct {
	Harness            *string            `json:"harness,omitempty" doc:"inference-perf (the only harness)"`
	Workload           *string            `json:"workload,omitempty" doc:"a named workload shipped with Lensfn, e.g. sanity_random.yaml"`
	WorkloadYAML       *string            `json:"workload_yaml,omitempty" doc:"an inline inference-perf config (at most 256 KiB)"`
	Parallelism        *int               `json:"parallelism,omitempty" doc:"workers, 1-32 (default 1)"`
	WaitTimeoutSeconds *int               `json:"wait_timeout_seconds,omitempty" doc:"hard limit per invocation, 1-14400; null or absent: automatic"`
	HarnessMemoryGiB   *float64           `json:"harness_memory_gib,omitempty" doc:"memory per worker (default 8)"`
	AcceleratorProfile *string            `json:"accelerator_profile,omitempty" doc:"registered hardware profile"`
	StorageClassName   *string            `json:"storage_class_name,omitempty" doc:"null or empty: the in-process load generator mounts no results volume (else 422)"`
	Matrix             []MatrixPoint      `json:"matrix,omitempty" doc:"at most 50 points"`
	ConcurrencyStages  []ConcurrencyStage `json:"concurrency_stages,omitempty" doc:"at most 20 stages (default 1/32, 8/96, 32/96, 64/192 with a matrix)"`
	WarmupRequests     *int               `json:"warmup_requests,omitempty" doc:"uncounted warm-up requests of a matrix, 0-50 (default 2)"`
	SharedPrefix       *SharedPrefix      `json:"shared_prefix,omitempty" doc:"a generated shared-prefix workload"`
	Repetitions        *int               `json:"repetitions,omitempty" doc:"times the whole workload runs, back to back, 1-20 (default 1); a comparison's spread and confidence intervals come from them"`
}

// EvaluateRunRequest is the body of POST /api/v1/evaluate/runs.
type EvaluateRunRequest struct {
	DeploymentExecutionID *string `json:"deployment_execution_id,omitempty" doc:"benchmark this deployment execution (exactly one of this and model_service_group_id)"`
	ModelServiceGroupID   *string `json:"model_service_group_id,omitempty" doc:"benchmark the active member of this Model Service"`
	APIKey                *string `json:"api_key,omitempty" doc:"model access key, required with model_service_group_id; never stored in plain text or re-emitted"`
	ClusterSessionID      *string `json:"cluster_session_id,omitempty" doc:"must match the execution's session when given"`
	BenchmarkSpec
	SLATargets          *SLATargets      `json:"sla_targets,omitempty" doc:"service-level targets checked against the result"`
	SpecificationFile   *string          `json:"specification_file,omitempty" doc:"empty, or the guide the execution was deployed from (guides/<name>); else 422"`
	HTTPProxy           *string          `json:"http_proxy,omitempty" doc:"empty: the load generator connects through the egress policy, not a proxy (else 422)"`
	HTTPSProxy          *string          `json:"https_proxy,omitempty" doc:"empty: the load generator connects through the egress policy, not a proxy (else 422)"`
	NoProxy             *string          `json:"no_proxy,omitempty" doc:"empty: the load generator connects through the egress policy, not a proxy (else 422)"`
	BenchmarkSource     *BenchmarkSource `json:"benchmark_source,omitempty" doc:"the defaults only (Lensfn fetches no benchmark source; else 422)"`
	UseBaselineEndpoint *bool            `json:"use_baseline_endpoint,omitempty" doc:"benchmark the execution's baseline endpoint"`
}

// RunRequested is the data of TypeRunRequested: a POST /runs body plus an idempotency key.
type RunRequested struct {
	IdempotencyKey string `json:"idempotency_key" doc:"1-200 characters; the same key always names the same run"`
	EvaluateRunRequest
}

// RunQueued is the data of TypeRunQueued.
type RunQueued struct {
	RunID string `json:"run_id" doc:"the benchmark run"`
}

// SLACheck is one checked target of a run's SLA verdict.
type SLACheck struct {
	Actual     *float64 `json:"actual" doc:"the measured value, null when unavailable"`
	Target     float64  `json:"target" doc:"the configured target"`
	Unit       string   `json:"unit" doc:"ms, tok/s or %"`
	Percentile string   `json:"percentile,omitempty" doc:"for ttft and tpot"`
	Met        *bool    `json:"met" doc:"null when the actual value is unavailable"`
	Margin     *float64 `json:"margin" doc:"how far the actual value is inside the target (positive) or past it (negative), in the check's unit; null when unavailable"`
	// MarginPercent is the margin as a percentage of the target.
	MarginPercent  *float64 `json:"margin_percent" doc:"the margin as a percentage of the target; null when unavailable or the target is 0"`
	RepetitionsMet *int     `json:"repetitions_met,omitempty" doc:"with repetitions: how many repetitions met this target"`
	Repetitions    *int     `json:"repetitions,omitempty" doc:"with repetitions: how many repetitions were checked"`
}

// SLAVerdict is a run's SLA verdict.
type SLAVerdict struct {
	Met            *bool               `json:"met" doc:"false if any check failed, true if all passed, null without checks"`
	Checks         map[string]SLACheck `json:"checks" doc:"ttft, tpot, throughput, success_rate: only the configured targets"`
	RepetitionsMet *int                `json:"repetitions_met,omitempty" doc:"with repetitions: how many repetitions met every target"`
	Repetitions    *int                `json:"repetitions,omitempty" doc:"with repetitions: how many repetitions were checked"`
}

// HeadlineMetrics are the figures a finished run announces.
type HeadlineMetrics struct {
	RequestCount     int64    `json:"request_count" doc:"measured requests"`
	SuccessRate      *float64 `json:"success_rate" doc:"percent"`
	ThroughputTPS    *float64 `json:"throughput_tps" doc:"output tokens per second"`
	ThroughputRPS    *float64 `json:"throughput_rps" doc:"requests per second"`
	TTFTMs           *float64 `json:"ttft_ms" doc:"p50 time to first token"`
	TPOTMs           *float64 `json:"tpot_ms" doc:"p50 time per output token"`
	RequestLatencyMs *float64 `json:"request_latency_ms" doc:"p50 request latency"`
}

// RunFinished is the data of TypeRunFinished.
type RunFinished struct {
	RunID   string          `json:"run_id" doc:"the benchmark run"`
	Status  string          `json:"status" doc:"succeeded, failed or cancelled"`
	Error   *string         `json:"error" doc:"why it failed, null otherwise"`
	Metrics HeadlineMetrics `json:"metrics" doc:"headline metrics of the measured requests"`
	SLA     *SLAVerdict     `json:"sla" doc:"the SLA verdict, null without targets"`
}
