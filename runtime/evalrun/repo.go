package evalrun

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/recordrepo"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// ErrNoSealer is returned when a run carries an API key but no sealing key is configured.
var ErrNoSealer = errors.New("evalrun: LENS_SECRET_KEY is not configured, so API keys cannot be stored")

// Repo keeps runs in the state store and their artifacts under the data dir.
type Repo struct {
	Store   state.Store
	Sealer  *secret.Sealer // nil: runs with API keys are refused
	DataDir string
}

// NewID returns a random UUID (version 4), as the spec's run ids are.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// RunDir is where a run's artifacts live.
func (r *Repo) RunDir(id string) string {
	return filepath.Join(r.DataDir, "artifacts", "evaluations", id)
}

// RecordsFile is the per-request artifact (JSON lines) a runner writes in a run's folder.
const RecordsFile = "per-request.jsonl"

// RecordsPath is where a run's per-request artifact lives.
func (r *Repo) RecordsPath(id string) string { return filepath.Join(r.RunDir(id), RecordsFile) }

// LeaseName is the lease a runner holds on a run.
func LeaseName(id string) string { return Kind + ":" + id }

// docs is the shared record repository under this one.
func (r *Repo) docs() *recordrepo.Repo[*Run] {
	return &recordrepo.Repo[*Run]{Store: r.Store, Sealer: r.Sealer, Kind: Kind, NoSealer: ErrNoSealer,
		Encode: r.record, Decode: fromRecord, SetStatus: func(run *Run, status string) { run.Status = status }}
}

func attrs(run *Run) map[string]string {
	return map[string]string{
		"deployment_execution_id": Str(run.DeploymentExecutionID),
		"model_service_group_id":  Str(run.ModelServiceGroupID),
		"model":                   Str(run.Model),
	}
}

func searchText(run *Run) string {
	return strings.ToLower(strings.Join([]string{run.ID, Str(run.Model), Str(run.Endpoint),
		Str(run.Workload), Str(run.DeploymentExecutionID)}, " "))
}

func (r *Repo) record(run *Run, version int64) (state.Record, error) {
	doc, err := Marshal(run)
	if err != nil {
		return state.Record{}, err
	}
	rec := state.Record{Kind: Kind, ID: run.ID, Status: run.Status, Version: version, Attrs: attrs(run),
		Search: searchText(run), Doc: doc}
	if created, err := time.Parse(time.RFC3339Nano, run.CreatedAt); err == nil {
		rec.CreatedAt = created
	}
	return rec, nil
}

// Create stores a new run, sealing apiKey when there is one. ErrExists when the id is taken.
func (r *Repo) Create(ctx context.Context, run *Run, apiKey string) error {
	docs := r.docs()
	if apiKey != "" {
		sealed, err := docs.SealKey(run.ID, apiKey)
		if err != nil {
			return err
		}
		run.Internal.APIKey = sealed
	}
	// The queued entry goes on the stream first: once the record is stored a runner may claim
	// the run and append "running", and a watcher must never see running before queued. An id
	// already taken gets no entry (Create refuses it below); a store that fails the Create
	// leaves one entry on the stream of a run that never was, which no one reads.
	if _, err := r.Store.Get(ctx, Kind, run.ID); errors.Is(err, state.ErrNotFound) {
		r.appendStatus(ctx, run)
	}
	return docs.Create(ctx, run)
}

// Load returns the run without its logs (what runners poll).
func (r *Repo) Load(ctx context.Context, id string) (*Run, error) { return r.docs().Load(ctx, id) }

// Ended says whether run id has ended for good (a terminal status), for
// inventory.Repo.HolderEnded: a run not found is not ended (a run takes its deployment's use
// before its record is created), nor is one whose record cannot be read.
func (r *Repo) Ended(ctx context.Context, id string) (bool, error) {
	rec, err := r.Store.Get(ctx, Kind, id)
	if errors.Is(err, state.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return Terminal(rec.Status), nil
}

// Get returns the run with its retained logs and logs_truncated.
func (r *Repo) Get(ctx context.Context, id string) (*Run, error) {
	docs := r.docs()
	run, err := docs.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	lines, truncated, err := docs.Logs(ctx, id)
	if err != nil {
		return nil, err
	}
	run.Logs, run.LogsTruncated = lines, &truncated
	return run, nil
}

// List returns up to limit runs, newest first.
func (r *Repo) List(ctx context.Context, limit int) ([]*Run, error) {
	page, err := r.Store.List(ctx, state.Query{Kind: Kind, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*Run, 0, len(page.Records))
	for _, rec := range page.Records {
		run, err := fromRecord(rec)
		if err != nil {
			continue // a record no version of Lensfn can read is not listed
		}
		out = append(out, run)
	}
	return out, nil
}

// ListStatus returns up to limit runs in any of the statuses, newest first.
func (r *Repo) ListStatus(ctx context.Context, limit int, statuses ...string) ([]*Run, error) {
	page, err := r.Store.List(ctx, state.Query{Kind: Kind, Status: statuses, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*Run, 0, len(page.Records))
	for _, rec := range page.Records {
		if run, err := fromRecord(rec); err == nil {
			out = append(out, run)
		}
	}
	return out, nil
}

func fromRecord(rec state.Record) (*Run, error) {
	run, err := Unmarshal(rec.Doc)
	if err != nil {
		return nil, err
	}
	run.Status = rec.Status
	return run, nil
}

// APIKey opens the run's sealed key ("" when it has none).
func (r *Repo) APIKey(run *Run) (string, error) {
	return r.docs().OpenKey(run.ID, run.Internal.APIKey)
}

// Transition moves a run from one of from to status to, applying mutate to its document;
// see state.Transition for the concurrency contract (exactly one of racing callers wins).
func (r *Repo) Transition(ctx context.Context, id string, from []string, to string, fence state.Fence, mutate func(*Run) error) (*Run, error) {
	run, err := r.docs().Transition(ctx, id, from, to, fence, mutate)
	if err != nil {
		return nil, err
	}
	r.appendStatus(ctx, run)
	return run, nil
}

// Patch edits a run without changing its status (progress, heartbeats, cancel requests).
func (r *Repo) Patch(ctx context.Context, id string, fence state.Fence, mutate func(*Run) error) (*Run, error) {
	for range 8 {
		rec, err := r.Store.Get(ctx, Kind, id)
		if err != nil {
			return nil, err
		}
		run, err := r.Transition(ctx, id, []string{rec.Status}, rec.Status, fence, mutate)
		if errors.Is(err, state.ErrInvalidTransition) {
			continue // the status moved between the read and the write: patch the new one
		}
		return run, err
	}
	return nil, fmt.Errorf("evalrun: run %s kept changing status", id)
}

// Logf appends one line to the run's log (the store keeps the newest 500).
func (r *Repo) Logf(ctx context.Context, id, format string, args ...any) {
	line := r.docs().Log(ctx, id, "%s", secret.Redact(fmt.Sprintf(format, args...)))
	_, _ = r.Store.AppendProgress(ctx, Kind, id, map[string]string{"type": EntryLog, "line": line})
}

// Delete removes the record (with its indexes, logs and progress), its workers and its
// artifact folder.
func (r *Repo) Delete(ctx context.Context, id string, version int64) error {
	if err := r.Store.Delete(ctx, Kind, id, state.DeleteOptions{Version: version}); err != nil {
		return err
	}
	if err := r.deleteWorkers(ctx, id); err != nil {
		return err
	}
	return os.RemoveAll(r.RunDir(id))
}
