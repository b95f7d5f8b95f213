package evalrun

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/livesummary"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/state"
)

// Kind is the state-store kind of benchmark runs.
const Kind = "evaluation-run"

// Run statuses (reference/lens-evaluation.md §3).
const (
	StatusQueued     = "queued"
	StatusRunning    = "running"
	StatusCancelling = "cancelling"
	StatusSucceeded  = "succeeded"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Statuses lists every status in lifecycle order.
var Statuses = []string{StatusQueued, StatusRunning, StatusCancelling, StatusSucceeded, StatusFailed, StatusCancelled}

// transitions is the run state machine; a self-transition is always allowed.
var transitions = map[string][]string{
	StatusQueued:     {StatusRunning, StatusCancelling, StatusFailed, StatusCancelled},
	StatusRunning:    {StatusCancelling, StatusSucceeded, StatusFailed, StatusCancelled},
	StatusCancelling: {StatusCancelled, StatusFailed},
}

// CanTransition reports whether a run may move from one status to another.
func CanTransition(from, to string) bool {
	return from == to || slices.Contains(transitions[from], to)
}

// Terminal reports whether a status has no way out (delete is allowed only then).
func Terminal(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCancelled
}

// Active reports whether a run still has work ahead.
func Active(status string) bool { return !Terminal(status) }

// Sources returns the statuses from which to is reachable (for state.Transition).
func Sources(to string) []string { return state.SourcesOf(Statuses, CanTransition, to) }

// Phases of a running run (the `phase` field).
const (
	PhasePreparingMonitoring = "preparing-monitoring"
	PhaseWarmup              = "warmup"
	PhaseBenchmark           = "benchmark"
)

// PhaseMatrix is the phase of matrix point i.
func PhaseMatrix(i int) string { return fmt.Sprintf("matrix-%d", i) }

// Timestamp formats t as the spec writes times: RFC 3339 UTC, millisecond precision, six digits
// ("2026-09-23T09:18:24.287000Z").
func Timestamp(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000000Z")
}

// Now is the current time as a Timestamp.
func Now() string { return Timestamp(time.Now()) }

// Run is one benchmark run: its public document (BenchmarkRunResponse) as Go fields, the stored
// fields this version does not know (Extra), and what is stored but never shown (Internal).
// The evaluation API's OpenAPI schema of a run is generated from Run itself. tests/openapi checks
// real answers against that schema (additionalProperties false), and that every field of
// events.EvaluateRunRequest but api_key (BuildRun copies the request's fields as sent) is one of
// Run's, so neither a new record field nor a new request field can go undocumented. Blocks the
// runner writes as they come (metrics, results, monitoring) are any JSON.
type Run struct {
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
	Benchmark           *Benchmark          `json:"benchmark,omitempty" doc:"the benchmark as asked, every key present, defaults filled in"`
	BenchmarkRuntime    json.RawMessage     `json:"benchmark_runtime,omitempty"`
	Timing              *Timing             `json:"timing,omitempty" doc:"the timing estimate (left out of lists)"`
	ClusterID           *string             `json:"cluster_id,omitempty"`
	DeploymentOwnership *string             `json:"deployment_ownership,omitempty" doc:"existing-endpoint or evaluation"`
	Model               *string             `json:"model,omitempty"`
	Namespace           rawjson.Opt[string] `json:"namespace,omitzero"`
	Endpoint            *string             `json:"endpoint,omitempty"`
	EndpointKind        *string             `json:"endpoint_kind,omitempty"`
	EndpointUsed        *string             `json:"endpoint_used,omitempty"`
	Deployment          json.RawMessage     `json:"deployment,omitempty" doc:"name, namespace and endpoint of the target"`
	DeploymentCases     json.RawMessage     `json:"deployment_cases,omitempty"`
	DeploymentCaseID    *string             `json:"deployment_case_id,omitempty"`
	DeploymentRunID     *string             `json:"deployment_run_id,omitempty"`
	DeploymentConfig    json.RawMessage     `json:"deployment_configuration,omitempty"`
	Configuration       json.RawMessage     `json:"configuration,omitempty" doc:"the deployed configuration's facts, null when none"`
	Guide               rawjson.Opt[string] `json:"guide,omitzero"`
	OwnerUserID         rawjson.Opt[string] `json:"owner_user_id,omitzero" doc:"the token that created the run; null when nobody authenticated"`
	OwnerBackendID      *string             `json:"owner_backend_id,omitempty" doc:"the backend (LENS_BACKEND_ID) that created the run; absent for the unnamed one"`
	EvaluationWorkflow  *string             `json:"evaluation_workflow_id,omitempty" doc:"the workflow that created the run"`
	EvaluationCase      *string             `json:"evaluation_case_id,omitempty" doc:"the workflow case that created the run"`

	// What the runner writes as the run goes.
	OwnerInstanceID    *string      `json:"owner_instance_id,omitempty" doc:"the runner instance that claimed the run"`
	OwnerPID           *int         `json:"owner_pid,omitempty"`
	HeartbeatAt        *string      `json:"heartbeat_at,omitempty"`
	StartedAt          *string      `json:"started_at,omitempty"`
	BenchmarkStartedAt *string      `json:"benchmark_started_at,omitempty"`
	Phase              *string      `json:"phase,omitempty"`
	PhaseStartedAt     *string      `json:"phase_started_at,omitempty"`
	ProgressPercent    *float64     `json:"progress_percent,omitempty"`
	ProgressMessage    *string      `json:"progress_message,omitempty"`
	LiveMetrics        *LiveMetrics `json:"live_metrics,omitempty" doc:"while running"`
	Logs               []string     `json:"logs,omitzero" doc:"left out of lists"`
	LogsTruncated      *bool        `json:"logs_truncated,omitempty"`
	Result
	Error         rawjson.Opt[string] `json:"error,omitzero" doc:"why the run failed; null when it ended without an error"`
	FinishedAt    *string             `json:"finished_at,omitempty"`
	CleanupStatus *string             `json:"cleanup_status,omitempty"`

	// Extra holds the stored fields this version of Lensfn does not know (a newer version's),
	// and stored values of known fields the Go fields cannot carry as they are (an explicit null
	// or an empty list where a value may be left out), written back unchanged.
	Extra map[string]json.RawMessage `json:"-"`
	// Internal is stored with the run and never shown.
	Internal Internal `json:"-"`
}

// Result is what a benchmark's end stores on its run: the benchmark-runner fills it in as the
// workload goes, and Finish writes it. A nil block is left as stored.
type Result struct {
	Warmup            json.RawMessage    `json:"warmup,omitempty"`
	Metrics           json.RawMessage    `json:"metrics,omitempty"`
	Partial           *bool              `json:"partial,omitempty" doc:"the metrics cover only the records a lost runner had written"`
	PartialReason     *string            `json:"partial_reason,omitempty"`
	MatrixResults     json.RawMessage    `json:"matrix_results,omitempty" doc:"left out of lists"`
	RateStageResults  json.RawMessage    `json:"rate_stage_results,omitempty" doc:"left out of lists"`
	RepetitionResults json.RawMessage    `json:"repetition_results,omitempty" doc:"with repetitions: each repetition's headline metrics; left out of lists"`
	Bootstrap         *Bootstrap         `json:"bootstrap,omitempty" doc:"per repetition the request-level bootstrap replicates a comparison's confidence intervals come from; left out of lists"`
	CapacityAnalysis  json.RawMessage    `json:"capacity_analysis,omitempty"`
	Diagnostics       json.RawMessage    `json:"diagnostics,omitempty" doc:"evidence items (epp_readiness, kv_working_set, harness, hardware_profile, cluster), each available (cluster: or partial) or unavailable with why"`
	Monitoring        json.RawMessage    `json:"monitoring,omitempty"`
	ResourceSnapshot  json.RawMessage    `json:"resource_snapshot,omitempty"`
	SLA               *events.SLAVerdict `json:"sla,omitempty"`
	Artifacts         json.RawMessage    `json:"artifacts,omitempty"`
}

// Internal is the stored part of a run no response shows.
type Internal struct {
	// APIKey is the endpoint key sealed with runtime/secret (never plain text).
	APIKey string `json:"api_key_sealed,omitempty"`
	// CancelRequested is set by cancel; the runner polls it and winds down within a second.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// Model is the model name requests carry (a Model Service's published name, or the
	// execution's model).
	Model string `json:"model,omitempty"`
	// Endpoint is the OpenAI base URL the runner sends to.
	Endpoint string `json:"endpoint,omitempty"`
	// IdempotencyKey is the run.requested key that created the run, if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// RecordsPath is the per-request JSONL the runner writes.
	RecordsPath string `json:"records_path,omitempty"`
}

// internalKey holds Internal inside the stored document.
const internalKey = "_internal"

// New returns an empty run with an id, kind "benchmark", status queued and its creation time.
func New(id string) *Run {
	return &Run{Kind: "benchmark", ID: id, Status: StatusQueued, CreatedAt: Now()}
}

// ErrorText is the run's error ("" when it has none).
func (r *Run) ErrorText() string { return r.Error.Get() }

// Finish stores res's blocks on the run (a nil block is left as stored).
func (r *Run) Finish(res Result) {
	merge := func(dst *json.RawMessage, src json.RawMessage) {
		if src != nil {
			*dst = src
		}
	}
	merge(&r.Warmup, res.Warmup)
	merge(&r.Metrics, res.Metrics)
	merge(&r.MatrixResults, res.MatrixResults)
	merge(&r.RateStageResults, res.RateStageResults)
	merge(&r.RepetitionResults, res.RepetitionResults)
	merge(&r.CapacityAnalysis, res.CapacityAnalysis)
	merge(&r.Diagnostics, res.Diagnostics)
	merge(&r.Monitoring, res.Monitoring)
	merge(&r.ResourceSnapshot, res.ResourceSnapshot)
	merge(&r.Artifacts, res.Artifacts)
	if res.Partial != nil {
		r.Partial = res.Partial
	}
	if res.PartialReason != nil {
		r.PartialReason = res.PartialReason
	}
	if res.Bootstrap != nil {
		r.Bootstrap = res.Bootstrap
	}
	if res.SLA != nil {
		r.SLA = res.SLA
	}
}

// Clone returns a deep copy.
func (r *Run) Clone() *Run {
	doc, err := r.MarshalJSON()
	if err != nil {
		panic(fmt.Sprintf("evalrun: run %s cannot be encoded: %v", r.ID, err)) // the record's own values only
	}
	c := &Run{}
	if err := c.UnmarshalJSON(doc); err != nil {
		panic(fmt.Sprintf("evalrun: run %s does not decode: %v", r.ID, err))
	}
	c.Internal = r.Internal
	return c
}

// ListItem is the run as a list shows it: without its logs, its per-point and per-stage results,
// its timing estimate, its repetitions' results and its bootstrap replicates.
func (r *Run) ListItem() *Run {
	c := r.Clone()
	c.Logs, c.MatrixResults, c.RateStageResults, c.Timing, c.Bootstrap, c.RepetitionResults = nil, nil, nil, nil, nil, nil
	for _, k := range []string{"logs", "matrix_results", "rate_stage_results", "timing", "bootstrap", "repetition_results"} {
		delete(c.Extra, k)
	}
	return c
}

func marshal(v any) ([]byte, error) { return rawjson.Encode(v) }

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

// Decode decodes a block the runner wrote (metrics, results) into v; false when it is absent,
// null or of another shape.
func Decode(raw json.RawMessage, v any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Str is *s, or "" for nil: a run's optional text field as text.
func Str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// JSON encodes a block for a run (metrics, results); the records' own values always encode.
func JSON(v any) json.RawMessage {
	raw, err := marshal(v)
	if err != nil {
		panic(fmt.Sprintf("evalrun: a run's block cannot be encoded: %v", err))
	}
	return raw
}

// Ptr is a pointer to v, for a run's optional fields.
func Ptr[T any](v T) *T { return &v }

// Document is the public document as raw fields by name (Extra included, Internal left out),
// for copying a run's blocks into another record (a workflow case keeps its run's results).
func (r *Run) Document() map[string]json.RawMessage {
	fields, err := r.fields()
	if err != nil {
		panic(fmt.Sprintf("evalrun: run %s cannot be encoded: %v", r.ID, err)) // the record's own values only
	}
	return fields
}
