package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/rawjson"
)

// Kind is the state-store kind of workflows.
const Kind = "evaluation-workflow"

// Kinds of workflow (the WorkflowFinished event's `kind`).
const (
	KindEvaluation = "evaluation" // POST /evaluations: cases, a comparison report
	KindSimple     = "simple"     // POST /workflow-runs: one deployment, one benchmark
)

// Ownership values of deployment_ownership.
const (
	OwnershipEvaluation = "evaluation"
	OwnershipExisting   = "existing-endpoint"
)

var errNotObject = errors.New("not a JSON object")

// Case is one case of an evaluation: a guide (the configuration) or a baseline. Its fields are
// the case's public document (EvaluationCase of the evaluation API's OpenAPI document, generated
// from this type); Extra keeps the stored fields this version does not know, written back as
// they were. Blocks the API writes as given (benchmarks, configurations, metrics) are any JSON.
// The fields are in the order of their keys, so a record without Extra encodes with sorted
// keys, as the store has always written it, in one pass.
type Case struct {
	Attempt                 rawjson.Opt[int]    `json:"attempt,omitzero" doc:"retries of the case so far"`
	BaselineCaseID          rawjson.Opt[string] `json:"baseline_case_id,omitzero"`
	BaselineCaseIDs         []string            `json:"baseline_case_ids,omitzero" doc:"a guide's baselines"`
	BaselineParameters      json.RawMessage     `json:"baseline_parameters,omitempty"`
	BaselineType            rawjson.Opt[string] `json:"baseline_type,omitzero" doc:"a baseline's type"`
	BaselineURL             rawjson.Opt[string] `json:"baseline_url,omitzero"`
	Benchmark               json.RawMessage     `json:"benchmark,omitempty"`
	BenchmarkPlanID         rawjson.Opt[string] `json:"benchmark_plan_id,omitzero"`
	Bootstrap               json.RawMessage     `json:"bootstrap,omitempty" doc:"the run's bootstrap replicates (left out of lists)"`
	CancelRequested         rawjson.Opt[bool]   `json:"cancel_requested,omitzero"`
	CleanupAttempts         rawjson.Opt[int]    `json:"cleanup_attempts,omitzero"`
	CleanupError            rawjson.Opt[string] `json:"cleanup_error,omitzero"`
	CleanupRequestedAt      rawjson.Opt[string] `json:"cleanup_requested_at,omitzero" doc:"when the cleanup was last requested"`
	CleanupStatus           rawjson.Opt[string] `json:"cleanup_status,omitzero"`
	Configuration           json.RawMessage     `json:"configuration,omitempty" doc:"the case's configuration facts (in lists)"`
	ConfigurationArtifactID rawjson.Opt[string] `json:"configuration_artifact_id,omitzero"`
	CustomParameters        json.RawMessage     `json:"custom_parameters,omitempty"`
	DependentGuideCaseID    rawjson.Opt[string] `json:"dependent_guide_case_id,omitzero" doc:"a kubernetes-service baseline's guide"`
	DeploymentCaseID        rawjson.Opt[string] `json:"deployment_case_id,omitzero"`
	DeploymentConfiguration json.RawMessage     `json:"deployment_configuration,omitempty" doc:"the configuration the case deploys (content, provenance)"`
	// DeploymentConfigurationID is the inventory configuration a baseline's generated
	// deployment was saved as.
	DeploymentConfigurationID rawjson.Opt[string]   `json:"deployment_configuration_id,omitzero"`
	DeploymentError           rawjson.Opt[string]   `json:"deployment_error,omitzero"`
	DeploymentGroupID         rawjson.Opt[string]   `json:"deployment_group_id,omitzero"`
	DeploymentName            rawjson.Opt[string]   `json:"deployment_name,omitzero"`
	DeploymentRequestedAt     rawjson.Opt[string]   `json:"deployment_requested_at,omitzero" doc:"when the deployment was last requested"`
	DeploymentRunID           rawjson.Opt[string]   `json:"deployment_run_id,omitzero"`
	DeploymentStatus          rawjson.Opt[string]   `json:"deployment_status,omitzero"`
	Endpoint                  rawjson.Opt[string]   `json:"endpoint,omitzero"`
	Error                     rawjson.Opt[string]   `json:"error,omitzero"`
	EvaluationRunID           rawjson.Opt[string]   `json:"evaluation_run_id,omitzero"`
	ExecutionID               rawjson.Opt[string]   `json:"execution_id,omitzero"`
	FailedStage               rawjson.Opt[string]   `json:"failed_stage,omitzero"`
	FinishedAt                rawjson.Opt[string]   `json:"finished_at,omitzero"`
	ID                        string                `json:"id" doc:"guide-<n> or baseline-<n>"`
	Kind                      string                `json:"kind" doc:"guide or baseline"`
	MatrixResults             json.RawMessage       `json:"matrix_results,omitempty" doc:"the run's matrix stages (left out of lists)"`
	Metrics                   json.RawMessage       `json:"metrics,omitempty"`
	Model                     rawjson.Opt[string]   `json:"model,omitzero"`
	Namespace                 rawjson.Opt[string]   `json:"namespace,omitzero"`
	PreserveDeployment        rawjson.Opt[bool]     `json:"preserve_deployment,omitzero"`
	Provider                  rawjson.Opt[string]   `json:"provider,omitzero"`
	ProviderRef               rawjson.Opt[string]   `json:"provider_ref,omitzero"`
	RateStageResults          json.RawMessage       `json:"rate_stage_results,omitempty" doc:"the run's rate stages (left out of lists)"`
	RepetitionResults         json.RawMessage       `json:"repetition_results,omitempty" doc:"the run's repetitions' headline metrics (left out of lists)"`
	ReplicaEndpoints          rawjson.Opt[[]string] `json:"replica_endpoints,omitzero"`
	ScenarioID                rawjson.Opt[string]   `json:"scenario_id,omitzero"`
	ScenarioName              rawjson.Opt[string]   `json:"scenario_name,omitzero"`
	SLA                       json.RawMessage       `json:"sla,omitempty" doc:"the run's SLA verdict"`
	SLATargets                json.RawMessage       `json:"sla_targets,omitempty"`
	StartedAt                 rawjson.Opt[string]   `json:"started_at,omitzero"`
	Status                    string                `json:"status"`
	WorkloadIDs               []string              `json:"workload_ids,omitzero"`

	// Extra holds the stored fields this version does not know, written back unchanged.
	Extra map[string]json.RawMessage `json:"-"`
}

type plainCase Case

// IsGuide reports whether the case benchmarks a plan's configuration.
func (c *Case) IsGuide() bool { return c.Kind == "guide" }

// SharesGuidePods reports whether the case is a kubernetes-service baseline, which deploys
// nothing and benchmarks its guide's plain balanced endpoint.
func (c *Case) SharesGuidePods() bool { return c.BaselineType.Get() == BaselineKubernetesService }

// Fields is the case's document as raw fields (Extra included).
func (c *Case) Fields() (map[string]json.RawMessage, error) {
	return encodeFields((*plainCase)(c), c.Extra)
}

// MarshalJSON encodes the case's document, Extra included, keys sorted.
func (c *Case) MarshalJSON() ([]byte, error) { return encodeDoc((*plainCase)(c), c.Extra) }

// UnmarshalJSON decodes a case, keeping the fields it does not know in Extra.
func (c *Case) UnmarshalJSON(b []byte) error {
	var p plainCase
	extra, err := decodeFields(b, &p)
	if err != nil {
		return fmt.Errorf("workflow: case: %w", err)
	}
	*c = Case(p)
	c.Extra = extra
	return nil
}

// ReportJSON is the stored comparison report, kept as it was written (a report of an older
// comparison version stays readable; comparison.NeedsRefresh says when to rebuild it). Its
// schema is comparison.Report's.
type ReportJSON json.RawMessage

// MarshalJSON writes the report (null when empty).
func (r ReportJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps the raw report.
func (r *ReportJSON) UnmarshalJSON(b []byte) error {
	*r = append(ReportJSON(nil), b...)
	return nil
}

// OptionalOf gives the OpenAPI schema comparison.Report's.
func (ReportJSON) OptionalOf() any { return comparison.Report{} }

// Ready reports whether the report holds one (neither absent nor null).
func (r ReportJSON) Ready() bool { return len(r) > 0 && !bytes.Equal(r, []byte("null")) }

// Workflow is one workflow record. Its exported fields are the public document
// (EvaluationWorkflowResponse of the evaluation API's OpenAPI document, generated from this
// type, whose answers tests/openapi checks against it); Extra keeps the stored fields this
// version does not know (fields of a newer build, a request's fields Lensfn echoes without
// reading), written back unchanged; Internal is stored but never shown. The fields are in the
// order of their keys (see Case).
type Workflow struct {
	BenchmarkPlans    []json.RawMessage   `json:"benchmark_plans,omitzero" doc:"an evaluation's plans as requested"`
	BenchmarkRuntime  json.RawMessage     `json:"benchmark_runtime,omitempty"`
	CancellationError rawjson.Opt[string] `json:"cancellation_error,omitzero" doc:"why a cancel's cleanup failed"`
	// Cases are an evaluation's cases in execution order; a simple workflow's single case is
	// stored in Internal and never shown, but is here too while the record is in memory.
	Cases                  []Case                     `json:"cases,omitzero" doc:"an evaluation's cases in execution order"`
	ClusterID              rawjson.Opt[string]        `json:"cluster_id,omitzero"`
	ClusterSessionID       rawjson.Opt[string]        `json:"cluster_session_id,omitzero"`
	CompareConfigurations  rawjson.Opt[bool]          `json:"compare_configurations,omitzero"`
	Confidence             rawjson.Opt[float64]       `json:"confidence,omitzero" doc:"an evaluation's level of its comparisons' confidence intervals"`
	ConfigurationArtifacts map[string]json.RawMessage `json:"configuration_artifacts,omitzero" doc:"configuration artifact id -> checksum"`
	CreatedAt              string                     `json:"created_at" doc:"RFC 3339 UTC"`
	DeploymentOwnership    rawjson.Opt[string]        `json:"deployment_ownership,omitzero" doc:"evaluation or existing-endpoint"`
	DeploymentRunID        rawjson.Opt[string]        `json:"deployment_run_id,omitzero" doc:"a simple workflow's deployment execution"`
	DeploymentSource       json.RawMessage            `json:"deployment_source,omitempty"`
	Endpoint               rawjson.Opt[string]        `json:"endpoint,omitzero" doc:"a simple workflow's benchmarked endpoint"`
	Error                  rawjson.Opt[string]        `json:"error,omitzero" doc:"why it failed"`
	EvaluationRunID        rawjson.Opt[string]        `json:"evaluation_run_id,omitzero" doc:"a simple workflow's benchmark run"`
	FailedStage            rawjson.Opt[string]        `json:"failed_stage,omitzero"`
	FinishedAt             rawjson.Opt[string]        `json:"finished_at,omitzero"`
	Harness                rawjson.Opt[string]        `json:"harness,omitzero" doc:"a simple workflow's harness"`
	ID                     string                     `json:"id"`
	Kind                   string                     `json:"kind" doc:"always workflow"`
	Metrics                json.RawMessage            `json:"metrics,omitempty" doc:"a simple workflow's benchmark metrics"`
	Model                  rawjson.Opt[string]        `json:"model,omitzero" doc:"a simple workflow's model"`
	Name                   rawjson.Opt[string]        `json:"name,omitzero" doc:"an evaluation's display name"`
	OwnerBackendID         rawjson.Opt[string]        `json:"owner_backend_id,omitzero" doc:"the backend (LENS_BACKEND_ID) that created the workflow; absent for the unnamed one"`
	OwnerUserID            rawjson.Opt[string]        `json:"owner_user_id,omitzero"`
	Parallelism            rawjson.Opt[int]           `json:"parallelism,omitzero" doc:"a simple workflow's parallelism"`
	Repetitions            rawjson.Opt[int]           `json:"repetitions,omitzero" doc:"a simple workflow's repetitions; an evaluation's default for cases whose benchmark sets none"`
	Report                 ReportJSON                 `json:"report,omitempty" doc:"the comparison report, null until the evaluation has one"`
	Runtime                json.RawMessage            `json:"runtime,omitempty" doc:"proxy settings, recorded"`
	StartedAt              rawjson.Opt[string]        `json:"started_at,omitzero"`
	Status                 string                     `json:"status" doc:"lens-evaluation.md §3"`
	Workload               rawjson.Opt[string]        `json:"workload,omitzero" doc:"a simple workflow's workload"`

	// Extra holds the stored fields this version does not know, written back unchanged.
	Extra map[string]json.RawMessage `json:"-"`
	// Internal is stored but never shown.
	Internal Internal `json:"-"`
}

type plainWorkflow Workflow

// Internal is the stored part of a workflow no response shows.
type Internal struct {
	// Kind is KindEvaluation or KindSimple.
	Kind string `json:"kind"`
	// Case is a simple workflow's single case (a simple workflow shows no cases).
	Case *Case `json:"case,omitempty"`
	// IdempotencyKey is the evaluation.requested key that created the workflow, if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// FinishedAnnounced is set once workflow.finished was emitted for the current attempt.
	FinishedAnnounced bool `json:"finished_announced,omitempty"`
	// FinishedClaimedAt is when an orchestrator instance took on emitting workflow.finished.
	FinishedClaimedAt string `json:"finished_claimed_at,omitempty"`
	// RunIDs are the benchmark runs the workflow created, over all attempts.
	RunIDs []string `json:"run_ids,omitempty"`
}

const internalKey = "_internal"

// New returns a workflow document of the given kind with id and status.
func New(kind, id, status string) *Workflow {
	return &Workflow{Kind: "workflow", ID: id, Status: status, Internal: Internal{Kind: kind}}
}

// Simple reports whether this is a simple deploy-then-benchmark workflow.
func (w *Workflow) Simple() bool { return w.Internal.Kind == KindSimple }

// AllCases returns pointers to the cases in execution order (a simple workflow's single hidden
// case), to read or change in place.
func (w *Workflow) AllCases() []*Case {
	out := make([]*Case, len(w.Cases))
	for i := range w.Cases {
		out[i] = &w.Cases[i]
	}
	return out
}

// Case returns the case with id (nil when there is none).
func (w *Workflow) Case(id string) *Case {
	for i := range w.Cases {
		if w.Cases[i].ID == id {
			return &w.Cases[i]
		}
	}
	return nil
}

// SetCases replaces the cases.
func (w *Workflow) SetCases(cases []*Case) {
	w.Cases = make([]Case, len(cases))
	for i, c := range cases {
		w.Cases[i] = *c
	}
}

// Fields is the public document as raw fields (Extra included; a simple workflow shows no
// cases).
func (w *Workflow) Fields() (map[string]json.RawMessage, error) {
	return encodeFields(w.public(), w.Extra)
}

// MarshalJSON encodes the public document (what the API answers), keys sorted.
func (w *Workflow) MarshalJSON() ([]byte, error) { return encodeDoc(w.public(), w.Extra) }

// public is the document's struct (a simple workflow shows no cases).
func (w *Workflow) public() *plainWorkflow {
	p := plainWorkflow(*w)
	if w.Simple() {
		p.Cases = nil
	}
	return &p
}

// Without returns the public document without the named fields.
func (w *Workflow) Without(keys ...string) map[string]json.RawMessage {
	fields, err := w.Fields()
	if err != nil {
		panic(fmt.Sprintf("workflow: %s cannot be encoded: %v", w.ID, err)) // its own fields only
	}
	for _, k := range keys {
		delete(fields, k)
	}
	return fields
}

// merge sets the document's fields named in raw (as sent), over what the struct holds.
func (w *Workflow) merge(raw map[string]json.RawMessage) error {
	fields, err := w.Fields()
	if err != nil {
		return err
	}
	for k, v := range raw {
		fields[k] = v
	}
	b, err := rawjson.Encode(fields)
	if err != nil {
		return err
	}
	var p plainWorkflow
	extra, err := decodeFields(b, &p)
	if err != nil {
		return err
	}
	p.Extra, p.Internal = extra, w.Internal
	*w = Workflow(p)
	return nil
}

// Marshal encodes the workflow for the store, internal fields included.
func Marshal(w *Workflow) ([]byte, error) {
	internal := w.Internal
	if w.Simple() && len(w.Cases) > 0 {
		internal.Case = &w.Cases[0]
	}
	raw, err := rawjson.Encode(internal)
	if err != nil {
		return nil, err
	}
	extra := make(map[string]json.RawMessage, len(w.Extra)+1)
	for k, v := range w.Extra {
		extra[k] = v
	}
	extra[internalKey] = raw
	return encodeDoc(w.public(), extra)
}

// Unmarshal decodes a stored workflow. A record of a build that kept no kind is an evaluation.
func Unmarshal(b []byte) (*Workflow, error) {
	var p plainWorkflow
	extra, err := decodeFields(b, &p)
	if errors.Is(err, errNotObject) {
		return nil, fmt.Errorf("workflow: stored workflow is not a JSON object")
	} else if err != nil {
		return nil, fmt.Errorf("workflow: stored workflow is not valid: %w", err)
	}
	w := (*Workflow)(&p)
	if raw, ok := extra[internalKey]; ok {
		if err := json.Unmarshal(raw, &w.Internal); err != nil {
			return nil, fmt.Errorf("workflow: stored workflow's internal part is not valid: %w", err)
		}
		delete(extra, internalKey)
	}
	if len(extra) > 0 {
		w.Extra = extra
	}
	if w.Internal.Kind == "" {
		w.Internal.Kind = KindEvaluation
	}
	if w.Simple() {
		w.Cases = nil
		if w.Internal.Case != nil {
			w.Cases = []Case{*w.Internal.Case}
			w.Internal.Case = nil
		}
	}
	return w, nil
}

// RunIDs lists every benchmark run the workflow created, over all attempts (what delete removes).
func (w *Workflow) RunIDs() []string { return w.Internal.RunIDs }

// AddRunID records a benchmark run the workflow created.
func (w *Workflow) AddRunID(id string) {
	if !slices.Contains(w.Internal.RunIDs, id) {
		w.Internal.RunIDs = append(w.Internal.RunIDs, id)
	}
}

// Raw is the report's JSON (nil when absent).
func (r ReportJSON) Raw() json.RawMessage { return json.RawMessage(r) }
