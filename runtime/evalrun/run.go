package evalrun

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

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

// Run is one benchmark run: its public document as raw JSON fields (rawjson.Object: String,
// Has, Raw, Get, Set, Remove, Keys), plus what is stored but never shown.
type Run struct {
	rawjson.Object
	Internal Internal
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

// New returns an empty run with an id, kind "benchmark" and status queued.
func New(id string) *Run {
	r := &Run{Object: rawjson.New()}
	r.Set("kind", "benchmark")
	r.Set("id", id)
	r.Set("status", StatusQueued)
	return r
}

// ID is the run's id.
func (r *Run) ID() string { return r.String("id") }

// Status is the run's status.
func (r *Run) Status() string { return r.String("status") }

// Clone returns a deep copy.
func (r *Run) Clone() *Run { return &Run{Object: r.Object.Clone(), Internal: r.Internal} }

// Without returns the public document without the named fields (list items).
func (r *Run) Without(keys ...string) *Run {
	c := r.Clone()
	for _, k := range keys {
		c.Remove(k)
	}
	return c
}

// Marshal encodes the run for the store, internal fields included.
func Marshal(r *Run) ([]byte, error) {
	doc := r.Map()
	internal, err := marshal(r.Internal)
	if err != nil {
		return nil, err
	}
	doc[internalKey] = internal
	return marshal(doc)
}

// Unmarshal decodes a stored run.
func Unmarshal(doc []byte) (*Run, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("evalrun: stored run is not a JSON object: %v", err)
	}
	r := &Run{}
	if raw, ok := fields[internalKey]; ok {
		if err := json.Unmarshal(raw, &r.Internal); err != nil {
			return nil, fmt.Errorf("evalrun: stored run's internal part is not valid: %w", err)
		}
		delete(fields, internalKey)
	}
	r.Object = rawjson.FromMap(fields)
	return r, nil
}

func marshal(v any) ([]byte, error) { return rawjson.Encode(v) }
