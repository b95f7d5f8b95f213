package benchmarkrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/state"
)

// A run with parallelism N > 1 is sent by N workers, as llm-d-benchmark deploys N harness pods:
// each worker sends the run's whole workload once (its own seed), so the aggregate load is N
// times the request (N x concurrency in flight, N x each rate), which is what the timing
// estimate (P multiplies the aggregate term) and the capacity analysis (offered rate = rate x
// parallelism) assume. The owner (the instance that claimed the run) checks monitoring, fans the
// workers out as events any instance may take (each claims its worker with a lease of its own),
// follows their progress, and once every worker ended merges their per-request records into the
// run's one result: every metric is computed over the union. A worker that stops renewing its
// lease before it reported fails the run, naming the worker. The owner's side is ownerMerge
// (merge.go); this file holds the worker's side and the execution's choice between the two.

// runWorkload sends the workload itself, or through workers when the run asks for several.
func (x *execution) runWorkload(ctx context.Context, out *outcome) error {
	if x.plan.distributed() {
		return x.distribute(ctx, out)
	}
	return x.workload(ctx, out)
}

// distribute fans the run's workers out, waits for them and merges their records.
func (x *execution) distribute(ctx context.Context, out *outcome) error {
	m := newOwnerMerge(x.r, x.plan)
	if err := m.fanOut(ctx); err != nil {
		return err
	}
	lost := m.await(ctx, x.progress, x.origin)
	// The records the workers left are merged even when one was lost or the run was cancelled,
	// so the partial result covers what was sent.
	if err := m.open(); err != nil {
		return err
	}
	defer m.close()
	x.merge = m
	x.seq = 0
	x.progress.resetPlanned()          // the merge plans the whole run's requests again (the workers' counts stay)
	mctx := context.WithoutCancel(ctx) // a cancel ended the workers; their records still merge
	werr := x.workload(mctx, out)
	x.merge = nil
	if started := m.rateStart(); started > 0 {
		x.rateStart = started - float64(x.started.UnixNano())/1e9
	}
	switch {
	case lost != nil:
		return lost
	case werr != nil:
		return werr
	}
	if err := m.unreached(); err != nil {
		return err
	}
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errCancelled) {
		return errShutdown // the records merged are partial: the owner is stopping
	}
	return nil
}

// The worker side: a worker is claimed from its event or the workers' sweep, sends the
// workload once and records how it ended on its record.

// onWorkerQueued claims the announced worker. While the worker runs, the delivery is held open
// (up to WorkerHold): on Knative, containerConcurrency 1 then routes the run's next worker event
// to another pod, and the autoscaler (concurrency target 1) adds pods until each worker has one.
func (r *Runner) onWorkerQueued(ctx context.Context, e cloudevent.Event) error {
	var p events.RunWorkerQueued
	if err := e.DecodeData(&p); err != nil {
		return err
	}
	if p.Worker < 0 || p.Worker >= evalrun.MaxParallelism || p.RunID == "" {
		return cloudevent.Permanent(fmt.Errorf("worker.queued names worker %d of run %q", p.Worker, p.RunID))
	}
	id := evalrun.WorkerID(p.RunID, p.Worker)
	started, err := r.workers.TryStart(ctx, id)
	if err != nil || !started {
		return err
	}
	hold := time.NewTimer(r.settings.WorkerHold)
	defer hold.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for r.workers.Running(id) {
		select {
		case <-ctx.Done():
			return nil
		case <-hold.C:
			return nil // the worker goes on in the background; its lease keeps it ours
		case <-tick.C:
		}
	}
	return nil
}

// queuedWorkers lists workers waiting longer than the sweep grace, oldest first: their event was
// lost or found every instance busy. The grace leaves fresh workers to their events, so one
// instance's sweep does not take every worker of a run before Knative scaled out.
func (r *Runner) queuedWorkers(ctx context.Context) ([]string, error) {
	ws, err := r.runs.ListWorkers(ctx, 100, evalrun.WorkerQueued)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].CreatedAt < ws[j].CreatedAt })
	ids := make([]string, 0, len(ws))
	for _, w := range ws {
		if created, err := time.Parse(time.RFC3339Nano, w.CreatedAt); err == nil && time.Since(created) < r.settings.WorkerSweepGrace {
			continue
		}
		ids = append(ids, w.ID())
	}
	return ids, nil
}

// claimWorker moves a queued worker to running under lease.
func (r *Runner) claimWorker(ctx context.Context, id string, lease state.Lease) (leasedrun.Job, error) {
	owner := r.owner()
	w, err := r.runs.TransitionWorker(ctx, id, []string{evalrun.WorkerQueued}, evalrun.WorkerRunning, lease.Fence(), func(w *evalrun.Worker) error {
		w.OwnerInstanceID, w.StartedAt, w.HeartbeatAt = owner, evalrun.Now(), evalrun.Now()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, held *leasedrun.Held) { r.runWorker(ctx, w, held) }, nil
}

// runWorker sends the run's workload once as worker w and records how it ended.
func (r *Runner) runWorker(ctx context.Context, w *evalrun.Worker, held *leasedrun.Held) {
	r.metrics.workers.Inc()
	end := func(status, msg string, failedStage *int, x *execution) {
		held.StopRenewing()
		if errors.Is(context.Cause(ctx), state.ErrLeaseLost) {
			r.log.Warnw("worker lease lost", "run", w.RunID, "worker", w.Index)
			return
		}
		bg := context.WithoutCancel(ctx)
		_, err := r.runs.TransitionWorker(bg, w.ID(), []string{evalrun.WorkerRunning}, status, held.Fence(), func(w *evalrun.Worker) error {
			w.Error, w.FailedStage, w.FinishedAt, w.InFlight = msg, failedStage, evalrun.Now(), 0
			if x != nil {
				w.Planned, w.Completed, w.Succeeded, w.Failed = x.progress.counts()
				if x.rateStart > 0 {
					w.RateStartedAt = float64(x.started.UnixNano())/1e9 + x.rateStart
				}
			}
			return nil
		})
		if err != nil {
			r.log.Warnw("could not record the worker's end", "run", w.RunID, "worker", w.Index, "error", err)
		}
		_ = r.deps.Store.ReleaseLease(bg, held.Lease())
	}
	run, err := r.runs.Load(ctx, w.RunID)
	if err != nil || run.Status != evalrun.StatusRunning {
		end(evalrun.WorkerCancelled, "the run is no longer running", nil, nil)
		return
	}
	x, err := r.newExecution(run, held.HeldLease, w)
	if err != nil {
		end(evalrun.WorkerFailed, err.Error(), nil, nil)
		return
	}
	path := r.runs.WorkerRecordsPath(w.RunID, w.Index)
	err = os.MkdirAll(filepath.Dir(path), 0o755)
	var f *os.File
	if err == nil {
		f, err = os.Create(path)
	}
	if err != nil {
		end(evalrun.WorkerFailed, "cannot create the worker's records: "+err.Error(), nil, nil)
		return
	}
	x.records = loadgen.NewJSONLWriter(f)
	r.runs.Logf(ctx, w.RunID, "Worker %d of %d started on %s", w.Index, w.Workers, r.owner())

	wctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		x.progress.watch(wctx, cancel, r.settings.PollInterval, r.settings.ReportInterval)
	}()
	x.origin = time.Now()
	werr := x.workload(wctx, &outcome{}) // a worker only sends: the owner assembles the outcome
	cause := context.Cause(wctx)
	cancel(nil)
	<-watched
	if cerr := x.records.Close(); cerr != nil && werr == nil {
		werr = cerr
	}
	var stage *int
	if x.seq > 0 {
		s := x.seq - 1 // the stage it was sending when it ended
		stage = &s
	}
	switch {
	case errors.Is(cause, errCancelled) || errors.Is(werr, errCancelled):
		end(evalrun.WorkerCancelled, errCancelled.Error(), stage, x)
	case werr != nil:
		end(evalrun.WorkerFailed, werr.Error(), stage, x)
	default:
		end(evalrun.WorkerSucceeded, "", nil, x)
	}
	_, completed, _, _ := x.progress.counts()
	r.runs.Logf(context.WithoutCancel(ctx), w.RunID, "Worker %d of %d ended: %d requests", w.Index, w.Workers, completed)
}
