package simtask

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Kind is the state-store kind of simulation tasks.
const Kind = "simulation-task"

// Statuses a task is stored in. Stop answers "cancelling" while the runner winds down.
const (
	StatusQueued     = "queued"
	StatusRunning    = "running"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
	StatusCancelling = "cancelling" // an answer of the stop route, never stored
)

// Statuses lists the stored statuses in lifecycle order (the order of list counts).
var Statuses = []string{StatusQueued, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled}

// Active reports whether a task still has work ahead (delete is refused while it does).
func Active(status string) bool { return status == StatusQueued || status == StatusRunning }

// Timestamp is an RFC 3339 UTC time with microsecond digits, as the spec writes them
// ("2026-09-23T09:18:24.287000Z").
type Timestamp time.Time

const timestampLayout = "2006-01-02T15:04:05.000000Z"

// Now is the current time truncated to milliseconds.
func Now() *Timestamp {
	t := Timestamp(time.Now().UTC().Truncate(time.Millisecond))
	return &t
}

func (t Timestamp) Time() time.Time { return time.Time(t) }

func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(timestampLayout) + `"`), nil
}

func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", s, err)
	}
	*t = Timestamp(parsed.UTC())
	return nil
}

// Simulation is the task's `simulation` block.
type Simulation struct {
	Backend            string         `json:"backend"`
	BackendOptions     map[string]any `json:"backend_options"`
	DurationSeconds    float64        `json:"duration_seconds"`
	NumRequests        *int           `json:"num_requests"`
	Stream             bool           `json:"stream"`
	WarmupEnabled      bool           `json:"warmup_enabled"`
	GracePeriodSeconds float64        `json:"grace_period_seconds"`
}

// DatasetRef names the dataset a prompt comes from.
type DatasetRef struct {
	Name      string  `json:"name"`
	Scenario  string  `json:"scenario"`
	Tokenizer *string `json:"tokenizer"`
}

// Trace is the replay configuration of the prompt.
type Trace struct {
	Path                  string   `json:"path"`
	Format                string   `json:"format"`
	FixedSchedule         bool     `json:"fixed_schedule"`
	TimeoutSeconds        float64  `json:"timeout_seconds"`
	SynthesisSpeedupRatio float64  `json:"synthesis_speedup_ratio"` // the task's scale_factor
	StartSeconds          float64  `json:"start_seconds"`
	EndSeconds            *float64 `json:"end_seconds"`
}

// Prompt is the task's `prompt` block.
type Prompt struct {
	Type    string     `json:"type"`
	Dataset DatasetRef `json:"dataset"`
	Trace   Trace      `json:"trace"`
}

// Artifact is one file of a task's result.
type Artifact struct {
	URI       string `json:"uri"`
	Kind      string `json:"kind"`
	Path      string `json:"path"`
	MediaType string `json:"media_type"`
}

// Result is what a completed task reports.
type Result struct {
	RunID          string            `json:"run_id"`
	Backend        string            `json:"backend"`
	BackendVersion string            `json:"backend_version"`
	Summary        json.RawMessage   `json:"summary"`
	Artifacts      []Artifact        `json:"artifacts,omitempty"`
	PerRequest     []json.RawMessage `json:"per_request,omitempty"`
	BackendMetrics map[string]any    `json:"backend_metrics,omitzero"` // {} on a task, omitted on list items (nil)
	Warnings       []string          `json:"warnings"`
}

// Task is a simulation task as the API shows it.
type Task struct {
	ID                            string         `json:"id"`
	Name                          string         `json:"name"`
	Description                   *string        `json:"description"`
	Scenario                      string         `json:"scenario"`
	Status                        string         `json:"status"`
	EndpointMode                  string         `json:"endpoint_mode"`
	EndpointNamespace             *string        `json:"endpoint_namespace"`
	EndpointService               *string        `json:"endpoint_service"`
	EndpointDeploymentExecutionID *string        `json:"endpoint_deployment_execution_id"`
	EndpointDeploymentRunID       *string        `json:"endpoint_deployment_run_id"`
	EndpointDeploymentCaseID      *string        `json:"endpoint_deployment_case_id"`
	EndpointClusterID             *string        `json:"endpoint_cluster_id"`
	EndpointClusterName           *string        `json:"endpoint_cluster_name"`
	EndpointDeploymentName        *string        `json:"endpoint_deployment_name"`
	EndpointURL                   string         `json:"endpoint_url"`
	ModelName                     string         `json:"model_name"`
	Simulation                    Simulation     `json:"simulation"`
	Prompt                        Prompt         `json:"prompt"`
	TaskDir                       string         `json:"task_dir"`
	ArtifactURI                   *string        `json:"artifact_uri"`
	ArtifactError                 *string        `json:"artifact_error"`
	LogsTruncated                 bool           `json:"logs_truncated"`
	ArtifactsIncomplete           bool           `json:"artifacts_incomplete"`
	BackendVersionInferred        bool           `json:"backend_version_inferred"`
	BackendVersion                *string        `json:"backend_version"`
	ConfigurationIDs              []string       `json:"configuration_ids"`
	ProgressPercent               float64        `json:"progress_percent"`
	ProgressMessage               string         `json:"progress_message"`
	Logs                          []string       `json:"logs"` // [] on list items and on a task without logs
	Result                        *Result        `json:"result"`
	ErrorMessage                  *string        `json:"error_message"`
	CreatedAt                     *Timestamp     `json:"created_at"`
	StartedAt                     *Timestamp     `json:"started_at"`
	ExecutionStartedAt            *Timestamp     `json:"execution_started_at"`
	CompletedAt                   *Timestamp     `json:"completed_at"`
	OwnerPID                      *int           `json:"owner_pid"`
	OwnerInstanceID               *string        `json:"owner_instance_id"`
	LiveSummary                   map[string]any `json:"live_summary,omitempty"`
	// Internal is kept in the store but never shown.
	Internal Internal `json:"-"`
}

// Internal is the stored part of a task no response shows.
type Internal struct {
	// APIKey is the endpoint key sealed with runtime/secret (never plain text).
	APIKey string `json:"api_key_sealed,omitempty"`
	// CancelRequested is set by stop; the runner polls it and winds down.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// Phase says where a running task is: "replaying" or "analyzing".
	Phase string `json:"phase,omitempty"`
	// RecordsPath is the per-request JSONL the replayer wrote.
	RecordsPath string `json:"records_path,omitempty"`
	// ReplayStartedAt is the wall-clock zero of the run's records (unix ns).
	ReplayStartedAt int64 `json:"replay_started_at,omitempty"`
	// ReplayMessage is why the replay ended (completed, duration reached, cancelled...).
	ReplayMessage string `json:"replay_message,omitempty"`
	// ReplayOutcome is the status the replay ended the task in (completed, cancelled, failed);
	// empty on records written before it existed.
	ReplayOutcome string `json:"replay_outcome,omitempty"`
	// Replay counts what the replay scheduled and sent; nil when the backend cannot tell (AIPerf).
	Replay *ReplayCounts `json:"replay,omitempty"`
	// RerunOf names the task this one re-runs.
	RerunOf string `json:"rerun_of,omitempty"`
}

// ReplayCounts is what a replay reports about its schedule: the requests it held, those it
// sent, and why the others were never released.
type ReplayCounts struct {
	Scheduled int64 `json:"scheduled"`
	Sent      int64 `json:"sent"`
	// NotSent counts the requests never released by reason: NotSentAfterDuration,
	// NotSentWaiting, NotSentRunEnded (absent reasons are zero).
	NotSent map[string]int64 `json:"not_sent,omitempty"`
}

// Reasons a scheduled request was never released (the keys of ReplayCounts.NotSent).
const (
	NotSentAfterDuration = "after_duration"    // due after the run's duration_seconds
	NotSentWaiting       = "waiting_on_unsent" // waited on a request that was never sent
	NotSentRunEnded      = "run_ended"         // the run was stopped or its grace period ran out first
)

// Unreleased is how many scheduled requests were never released.
func (c ReplayCounts) Unreleased() int64 { return c.Scheduled - c.Sent }

// Warning says, for the result's warnings and the task log, how many requests were never
// released and why; empty when every scheduled request was sent.
func (c ReplayCounts) Warning(durationSeconds float64) string {
	if c.Unreleased() <= 0 {
		return ""
	}
	var why []string
	if n := c.NotSent[NotSentAfterDuration]; n > 0 {
		why = append(why, fmt.Sprintf("%d were due after the run's duration of %gs", n, durationSeconds))
	}
	if n := c.NotSent[NotSentWaiting]; n > 0 {
		why = append(why, fmt.Sprintf("%d waited on requests that were never sent (later turns of their sessions, subagents those turns would have spawned, turns joining a subagent that was cut off)", n))
	}
	if n := c.NotSent[NotSentRunEnded]; n > 0 {
		why = append(why, fmt.Sprintf("%d were still waiting when the run was stopped or its grace period ran out", n))
	}
	msg := fmt.Sprintf("%d of %d scheduled requests were never released", c.Unreleased(), c.Scheduled)
	if len(why) > 0 {
		msg += ": " + strings.Join(why, "; ")
	}
	return msg
}

// stored is the document kept in the state store.
type stored struct {
	Task
	Internal Internal `json:"_internal"`
}

// Marshal encodes the task for the store, internal fields included.
func Marshal(t *Task) ([]byte, error) {
	return json.Marshal(stored{Task: *t, Internal: t.Internal})
}

// Unmarshal decodes a stored task.
func Unmarshal(doc []byte) (*Task, error) {
	var s stored
	if err := json.Unmarshal(doc, &s); err != nil {
		return nil, fmt.Errorf("simtask: stored task is not valid: %w", err)
	}
	t := s.Task
	t.Internal = s.Internal
	return &t, nil
}

// Attrs are the indexed filter attributes of a task (the list route's filters).
func (t *Task) Attrs() map[string]string {
	return map[string]string{
		"scenario": t.Scenario, "backend": t.Simulation.Backend, "model": t.ModelName,
		"dataset": t.Prompt.Dataset.Name, "trace_format": t.Prompt.Trace.Format, "endpoint": t.EndpointURL,
	}
}

// SearchText is what the list route's `search` matches.
func (t *Task) SearchText() string {
	parts := []string{t.ID, t.Name, t.ModelName, t.Prompt.Dataset.Name, t.EndpointURL, t.Scenario}
	if t.Description != nil {
		parts = append(parts, *t.Description)
	}
	return strings.ToLower(strings.Join(parts, " "))
}

// ListItem is the task as list pages show it: no log lines (`logs` is [], as in the spec's list
// example), per-request results, artifacts or backend metrics (spec/NOTES.md).
func (t Task) ListItem() Task {
	t.Logs = []string{}
	if t.Result != nil {
		r := *t.Result
		r.PerRequest, r.Artifacts, r.BackendMetrics = nil, nil, nil
		t.Result = &r
	}
	if t.Status != StatusRunning {
		t.LiveSummary = nil
	}
	return t
}
