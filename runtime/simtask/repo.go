package simtask

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/lensfn/lensfn/runtime/recordrepo"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// ErrNoSealer is returned when a task carries an API key but no sealing key is configured.
var ErrNoSealer = errors.New("simtask: LENS_SECRET_KEY is not configured, so API keys cannot be stored")

// Repo keeps tasks in the state store and their artifacts under the data dir.
type Repo struct {
	Store   state.Store
	Sealer  *secret.Sealer // nil: tasks with API keys are refused
	DataDir string
}

// NewID returns 8 lowercase hex characters.
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TaskDir is where a task's artifacts live.
func (r *Repo) TaskDir(id string) string {
	return filepath.Join(r.DataDir, "artifacts", "simulations", id)
}

// docs is the shared record repository under this one.
func (r *Repo) docs() *recordrepo.Repo[*Task] {
	return &recordrepo.Repo[*Task]{Store: r.Store, Sealer: r.Sealer, Kind: Kind, NoSealer: ErrNoSealer,
		Encode: r.record, Decode: r.decode, SetStatus: func(t *Task, status string) { t.Status = status }}
}

// decode reads a record with the paths derived from its id.
func (r *Repo) decode(rec state.Record) (*Task, error) {
	t, err := fromRecord(rec)
	if err != nil {
		return nil, err
	}
	r.derivePaths(t)
	return t, nil
}

func (r *Repo) record(t *Task, version int64) (state.Record, error) {
	doc, err := Marshal(t)
	if err != nil {
		return state.Record{}, err
	}
	rec := state.Record{Kind: Kind, ID: t.ID, Status: t.Status, Version: version, Attrs: t.Attrs(),
		Search: t.SearchText(), Doc: doc}
	if t.CreatedAt != nil {
		rec.CreatedAt = t.CreatedAt.Time()
	}
	return rec, nil
}

// Create stores a new queued task, sealing apiKey when there is one.
func (r *Repo) Create(ctx context.Context, t *Task, apiKey string) error {
	docs := r.docs()
	if apiKey != "" {
		sealed, err := docs.SealKey(t.ID, apiKey)
		if err != nil {
			return err
		}
		t.Internal.APIKey = sealed
	}
	if err := docs.Create(ctx, t); err != nil {
		return err
	}
	r.appendStatus(ctx, t)
	return nil
}

// Load returns the task without its logs (what runners poll).
func (r *Repo) Load(ctx context.Context, id string) (*Task, error) { return r.docs().Load(ctx, id) }

// derivePaths replaces the folder and records path a record stores with the ones derived from
// its id: whoever can write the store cannot make a function write or read elsewhere.
func (r *Repo) derivePaths(t *Task) {
	if r.DataDir == "" {
		return
	}
	t.TaskDir = r.TaskDir(t.ID)
	if t.Internal.RecordsPath != "" {
		t.Internal.RecordsPath = filepath.Join(t.TaskDir, ArtifactFiles["per-request-jsonl"])
	}
}

// Get returns the task with its retained logs.
func (r *Repo) Get(ctx context.Context, id string) (*Task, error) {
	docs := r.docs()
	t, err := docs.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.Logs, t.LogsTruncated, err = docs.Logs(ctx, id); err != nil {
		return nil, err
	}
	return t, nil
}

func fromRecord(rec state.Record) (*Task, error) {
	t, err := Unmarshal(rec.Doc)
	if err != nil {
		return nil, err
	}
	t.Status = rec.Status
	return t, nil
}

// APIKey opens the task's sealed key ("" when it has none).
func (r *Repo) APIKey(t *Task) (string, error) { return r.docs().OpenKey(t.ID, t.Internal.APIKey) }

// Transition moves a task between statuses, applying mutate to its document; see
// state.Transition for the concurrency contract (exactly one of racing callers wins).
func (r *Repo) Transition(ctx context.Context, id string, from []string, to string, fence state.Fence, mutate func(*Task) error) (*Task, error) {
	t, err := r.docs().Transition(ctx, id, from, to, fence, mutate)
	if err != nil {
		return nil, err
	}
	r.appendStatus(ctx, t)
	return t, nil
}

// Patch edits a task without changing its status (progress, live summary, cancel requests).
func (r *Repo) Patch(ctx context.Context, id string, fence state.Fence, mutate func(*Task) error) (*Task, error) {
	rec, err := r.Store.Get(ctx, Kind, id)
	if err != nil {
		return nil, err
	}
	return r.Transition(ctx, id, []string{rec.Status}, rec.Status, fence, mutate)
}

// Logf appends one line to the task's log (the store keeps the newest 500) and its progress stream.
func (r *Repo) Logf(ctx context.Context, id, format string, args ...any) {
	line := r.docs().Log(ctx, id, "%s", secret.Redact(fmt.Sprintf(format, args...)))
	_, _ = r.Store.AppendProgress(ctx, Kind, id, map[string]string{"type": EntryLog, "line": line})
}

// Delete removes the record (with its indexes, logs and progress) and its artifact folder.
func (r *Repo) Delete(ctx context.Context, id string, version int64) error {
	return r.docs().Delete(ctx, id, version, r.TaskDir(id))
}

// LeaseName is the lease a runner holds on a task.
func LeaseName(id string) string { return Kind + ":" + id }

// ArtifactFiles names the file of each artifact kind inside a task's folder. Artifact paths are
// derived from the task id and the kind, never read from the record, so a tampered record
// cannot point the API at another file.
var ArtifactFiles = map[string]string{"summary-json": "summary.json", "per-request-jsonl": "per-request.jsonl",
	"report-html": "report.html", "per-request-csv": "per-request.csv"}

// ArtifactPath is where an artifact kind of task id lives; false for an unknown kind.
func (r *Repo) ArtifactPath(id, kind string) (string, bool) {
	name, ok := ArtifactFiles[kind]
	if !ok {
		return "", false
	}
	return filepath.Join(r.TaskDir(id), name), true
}
