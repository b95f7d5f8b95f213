package evalrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
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
func Sources(to string) []string {
	var from []string
	for _, s := range Statuses {
		if s != to && CanTransition(s, to) {
			from = append(from, s)
		}
	}
	return from
}

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

// Run is one benchmark run: its public document as raw JSON fields, plus what is stored but
// never shown.
type Run struct {
	fields   map[string]json.RawMessage
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
	// MetricsURLs, when set, are the /metrics the runner scrapes for evidence instead of the
	// endpoint's: a routed deployment's replicas (a workflow case sets them from the deployer's
	// replica_endpoints).
	MetricsURLs []string `json:"metrics_urls,omitempty"`
}

// internalKey holds Internal inside the stored document.
const internalKey = "_internal"

// New returns an empty run with an id, kind "benchmark" and status queued.
func New(id string) *Run {
	r := &Run{fields: map[string]json.RawMessage{}}
	r.Set("kind", "benchmark")
	r.Set("id", id)
	r.Set("status", StatusQueued)
	return r
}

// ID is the run's id.
func (r *Run) ID() string { return r.String("id") }

// Status is the run's status.
func (r *Run) Status() string { return r.String("status") }

// String returns a string field ("" when absent, null or not a string).
func (r *Run) String(key string) string {
	var s string
	_ = json.Unmarshal(r.fields[key], &s)
	return s
}

// Has reports whether the document holds key (an explicit null counts).
func (r *Run) Has(key string) bool {
	_, ok := r.fields[key]
	return ok
}

// Raw returns the raw JSON of a field (nil when absent).
func (r *Run) Raw(key string) json.RawMessage { return r.fields[key] }

// Get decodes a field into v; false when the field is absent or null.
func (r *Run) Get(key string, v any) bool {
	raw, ok := r.fields[key]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Set stores v (marshalled) under key; a nil v stores an explicit null.
func (r *Run) Set(key string, v any) {
	if raw, ok := v.(json.RawMessage); ok {
		r.fields[key] = append(json.RawMessage(nil), raw...)
		return
	}
	raw, err := marshal(v)
	if err != nil {
		panic(fmt.Sprintf("evalrun: field %s cannot be encoded: %v", key, err)) // our own values only
	}
	r.fields[key] = raw
}

// Remove deletes a field.
func (r *Run) Remove(key string) { delete(r.fields, key) }

// Keys lists the document's fields, sorted.
func (r *Run) Keys() []string {
	keys := make([]string, 0, len(r.fields))
	for k := range r.fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Clone returns a deep copy.
func (r *Run) Clone() *Run {
	c := &Run{fields: make(map[string]json.RawMessage, len(r.fields)), Internal: r.Internal}
	for k, v := range r.fields {
		c.fields[k] = append(json.RawMessage(nil), v...)
	}
	return c
}

// MarshalJSON encodes the public document (what the API answers).
func (r *Run) MarshalJSON() ([]byte, error) { return marshal(r.fields) }

// Without returns the public document without the named fields (list items).
func (r *Run) Without(keys ...string) *Run {
	c := r.Clone()
	for _, k := range keys {
		delete(c.fields, k)
	}
	return c
}

// Marshal encodes the run for the store, internal fields included.
func Marshal(r *Run) ([]byte, error) {
	doc := make(map[string]json.RawMessage, len(r.fields)+1)
	for k, v := range r.fields {
		doc[k] = v
	}
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
	r := &Run{fields: fields}
	if raw, ok := fields[internalKey]; ok {
		if err := json.Unmarshal(raw, &r.Internal); err != nil {
			return nil, fmt.Errorf("evalrun: stored run's internal part is not valid: %w", err)
		}
		delete(fields, internalKey)
	}
	return r, nil
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
