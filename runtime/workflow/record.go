package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

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

// Doc is a record's public document as raw fields (rawjson.Object), so a read-modify-write
// never loses a field this version of Lensfn does not know.
type Doc = rawjson.Object

func newDoc() Doc { return rawjson.New() }

// Case is one case of an evaluation: a guide (the configuration) or a baseline.
type Case struct{ Doc }

// ID is the case id (guide-1, baseline-2...).
func (c *Case) ID() string { return c.String("id") }

// Status is the case's status.
func (c *Case) Status() string { return c.String("status") }

// IsGuide reports whether the case benchmarks a plan's configuration.
func (c *Case) IsGuide() bool { return c.String("kind") == "guide" }

// BaselineType is the baseline's type ("" for a guide).
func (c *Case) BaselineType() string { return c.String("baseline_type") }

// SharesGuidePods reports whether the case is a kubernetes-service baseline, which deploys
// nothing and benchmarks its guide's plain balanced endpoint.
func (c *Case) SharesGuidePods() bool { return c.BaselineType() == BaselineKubernetesService }

// CancelRequested reports whether a cancel names the case.
func (c *Case) CancelRequested() bool { return c.Bool("cancel_requested") }

// Workflow is one workflow record: its public document as raw fields plus what is stored but
// never shown.
type Workflow struct {
	Doc
	Internal Internal
	// cases is the decoded `cases` field (evaluations) or Internal.Case (simple workflows).
	cases []*Case
	// view marks a copy made for a response (Without): its fields are final.
	view bool
}

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
	w := &Workflow{Doc: newDoc(), Internal: Internal{Kind: kind}}
	w.Set("kind", "workflow")
	w.Set("id", id)
	w.Set("status", status)
	return w
}

// ID is the workflow id.
func (w *Workflow) ID() string { return w.String("id") }

// Status is the workflow status.
func (w *Workflow) Status() string { return w.String("status") }

// Simple reports whether this is a simple deploy-then-benchmark workflow.
func (w *Workflow) Simple() bool { return w.Internal.Kind == KindSimple }

// Cases returns the cases in execution order (a simple workflow's single hidden case).
func (w *Workflow) Cases() []*Case { return w.cases }

// Case returns the case with id (nil when there is none).
func (w *Workflow) Case(id string) *Case {
	for _, c := range w.cases {
		if c.ID() == id {
			return c
		}
	}
	return nil
}

// SetCases replaces the cases.
func (w *Workflow) SetCases(cases []*Case) { w.cases = cases }

// Clone returns a deep copy.
func (w *Workflow) Clone() *Workflow {
	c := &Workflow{Doc: w.Doc.Clone(), Internal: w.Internal}
	for _, k := range w.cases {
		c.cases = append(c.cases, &Case{Doc: k.Clone()})
	}
	if w.Internal.Case != nil {
		c.Internal.Case = c.cases[0]
	}
	return c
}

// sync writes the decoded cases back into the document.
func (w *Workflow) sync() {
	if w.view {
		return
	}
	if w.Simple() {
		if len(w.cases) > 0 {
			w.Internal.Case = w.cases[0]
		}
		return
	}
	if w.cases != nil || w.Has("cases") {
		cases := w.cases
		if cases == nil {
			cases = []*Case{}
		}
		w.Set("cases", cases)
	}
}

// MarshalJSON encodes the public document (what the API answers).
func (w *Workflow) MarshalJSON() ([]byte, error) {
	w.sync()
	return w.Doc.MarshalJSON()
}

// Without returns the public document without the named fields.
func (w *Workflow) Without(keys ...string) *Workflow {
	c := w.Clone()
	c.sync()
	for _, k := range keys {
		c.Remove(k)
	}
	c.cases, c.view = nil, true
	return c
}

// Marshal encodes the workflow for the store, internal fields included.
func Marshal(w *Workflow) ([]byte, error) {
	w.sync()
	doc := w.Map()
	internal, err := marshal(w.Internal)
	if err != nil {
		return nil, err
	}
	doc[internalKey] = internal
	return marshal(doc)
}

// Unmarshal decodes a stored workflow.
func Unmarshal(b []byte) (*Workflow, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("workflow: stored workflow is not a JSON object: %v", err)
	}
	w := &Workflow{}
	if raw, ok := fields[internalKey]; ok {
		if err := json.Unmarshal(raw, &w.Internal); err != nil {
			return nil, fmt.Errorf("workflow: stored workflow's internal part is not valid: %w", err)
		}
		delete(fields, internalKey)
	}
	w.Doc = rawjson.FromMap(fields)
	if w.Internal.Kind == "" {
		w.Internal.Kind = KindEvaluation
	}
	if w.Simple() {
		if w.Internal.Case != nil {
			w.cases = []*Case{w.Internal.Case}
		}
		return w, nil
	}
	if raw, ok := fields["cases"]; ok && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &w.cases); err != nil {
			return nil, fmt.Errorf("workflow: stored cases are not valid: %w", err)
		}
	}
	return w, nil
}

func marshal(v any) ([]byte, error) { return rawjson.Encode(v) }

// RunIDs lists every benchmark run the workflow created, over all attempts (what delete removes).
func (w *Workflow) RunIDs() []string { return w.Internal.RunIDs }

// AddRunID records a benchmark run the workflow created.
func (w *Workflow) AddRunID(id string) {
	if !slices.Contains(w.Internal.RunIDs, id) {
		w.Internal.RunIDs = append(w.Internal.RunIDs, id)
	}
}
