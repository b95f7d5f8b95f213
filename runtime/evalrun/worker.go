package evalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/lensfn/lensfn/runtime/state"
)

// WorkerKind is the state-store kind of a run's workers (parallelism N > 1).
const WorkerKind = "evaluation-run-worker"

// Worker statuses: queued until a runner claims it, running while it sends, then one of the
// terminal three.
const (
	WorkerQueued    = "queued"
	WorkerRunning   = "running"
	WorkerSucceeded = "succeeded"
	WorkerFailed    = "failed"
	WorkerCancelled = "cancelled"
)

// Worker is one of a run's parallelism workers: it sends the run's whole workload once (as one
// harness pod would) and writes its per-request records to its own file, which the run's owner
// merges. It is internal: the run's document never shows it.
type Worker struct {
	RunID   string `json:"run_id"`
	Index   int    `json:"index"`
	Workers int    `json:"workers"`
	Status  string `json:"status"`
	// OwnerInstanceID is the runner that claimed it.
	OwnerInstanceID string `json:"owner_instance_id,omitempty"`
	CreatedAt       string `json:"created_at"`
	StartedAt       string `json:"started_at,omitempty"`
	FinishedAt      string `json:"finished_at,omitempty"`
	HeartbeatAt     string `json:"heartbeat_at,omitempty"`
	// Phase is the phase it is sending (the owner shows the first worker's as the run's).
	Phase string `json:"phase,omitempty"`
	// Progress, for the owner's live metrics.
	Planned   int64 `json:"planned"`
	Completed int64 `json:"completed"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	InFlight  int64 `json:"in_flight"`
	// LiveSummary is its live summary in runtime/livesummary's stored form (the owner merges
	// the workers' into the run's live_metrics.summary).
	LiveSummary json.RawMessage `json:"live_summary,omitempty"`
	// Error is why it failed; FailedStage the workload stage (in the order every worker sends
	// them) it failed in, so the owner's merge fails at the same place.
	Error       string `json:"error,omitempty"`
	FailedStage *int   `json:"failed_stage,omitempty"`
	// RateStartedAt is when its rate stages began (Unix seconds; 0: none), for the evidence
	// windows.
	RateStartedAt float64 `json:"rate_started_at,omitempty"`
}

// ID is the worker's record id.
func (w *Worker) ID() string { return WorkerID(w.RunID, w.Index) }

// Terminal reports whether the worker has ended.
func (w *Worker) Terminal() bool {
	return w.Status == WorkerSucceeded || w.Status == WorkerFailed || w.Status == WorkerCancelled
}

// WorkerID is the record id of a run's worker k.
func WorkerID(runID string, k int) string { return runID + ".w" + strconv.Itoa(k) }

// WorkerLeaseName is the lease a runner holds on a worker.
func WorkerLeaseName(id string) string { return WorkerKind + ":" + id }

// WorkerRecordsPath is where worker k writes its per-request records (with their inter-token
// gaps) for the owner's merge.
func (r *Repo) WorkerRecordsPath(runID string, k int) string {
	return filepath.Join(r.RunDir(runID), "workers", fmt.Sprintf("w%d.jsonl", k))
}

func workerRecord(w *Worker, version int64) (state.Record, error) {
	doc, err := json.Marshal(w)
	if err != nil {
		return state.Record{}, err
	}
	return state.Record{Kind: WorkerKind, ID: w.ID(), Status: w.Status, Version: version,
		Attrs: map[string]string{"run_id": w.RunID}, Doc: doc}, nil
}

func workerFrom(rec state.Record) (*Worker, error) {
	var w Worker
	if err := json.Unmarshal(rec.Doc, &w); err != nil {
		return nil, err
	}
	w.Status = rec.Status
	return &w, nil
}

// CreateWorkers stores a run's n workers queued. Workers that exist already are kept (an owner
// that took the run over fans out again without restarting them).
func (r *Repo) CreateWorkers(ctx context.Context, runID string, n int) ([]*Worker, error) {
	out := make([]*Worker, n)
	now := Now()
	for k := range n {
		w := &Worker{RunID: runID, Index: k, Workers: n, Status: WorkerQueued, CreatedAt: now}
		rec, err := workerRecord(w, 0)
		if err != nil {
			return nil, err
		}
		if _, err := r.Store.Create(ctx, rec); errors.Is(err, state.ErrExists) {
			if w, err = r.LoadWorker(ctx, w.ID()); err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		out[k] = w
	}
	return out, nil
}

// LoadWorker returns one worker.
func (r *Repo) LoadWorker(ctx context.Context, id string) (*Worker, error) {
	rec, err := r.Store.Get(ctx, WorkerKind, id)
	if err != nil {
		return nil, err
	}
	return workerFrom(rec)
}

// ListWorkers returns up to limit workers in any of the statuses, newest first.
func (r *Repo) ListWorkers(ctx context.Context, limit int, statuses ...string) ([]*Worker, error) {
	page, err := r.Store.List(ctx, state.Query{Kind: WorkerKind, Status: statuses, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*Worker, 0, len(page.Records))
	for _, rec := range page.Records {
		if w, err := workerFrom(rec); err == nil {
			out = append(out, w)
		}
	}
	return out, nil
}

// TransitionWorker moves a worker from one of from to status to, applying mutate (see
// state.Transition: exactly one of racing callers wins; a fence keeps a lost runner out).
func (r *Repo) TransitionWorker(ctx context.Context, id string, from []string, to string, fence state.Fence, mutate func(*Worker) error) (*Worker, error) {
	var out *Worker
	_, err := state.Transition(ctx, r.Store, WorkerKind, id, state.TransitionSpec{From: from, To: to, Fence: fence,
		Mutate: func(rec *state.Record) error {
			w, err := workerFrom(*rec)
			if err != nil {
				return err
			}
			w.Status = to
			if mutate != nil {
				if err := mutate(w); err != nil {
					return err
				}
			}
			next, err := workerRecord(w, rec.Version)
			if err != nil {
				return err
			}
			rec.Doc, rec.Attrs = next.Doc, next.Attrs
			out = w
			return nil
		}})
	return out, err
}

// deleteWorkers removes a run's worker records (their files go with the run's folder).
func (r *Repo) deleteWorkers(ctx context.Context, runID string) error {
	page, err := r.Store.List(ctx, state.Query{Kind: WorkerKind, Attrs: map[string]string{"run_id": runID}, Limit: MaxParallelism})
	if err != nil {
		return err
	}
	for _, rec := range page.Records {
		if err := r.Store.Delete(ctx, WorkerKind, rec.ID, state.DeleteOptions{}); err != nil && !errors.Is(err, state.ErrNotFound) {
			return err
		}
	}
	return nil
}
