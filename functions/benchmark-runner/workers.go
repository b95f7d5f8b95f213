package benchmarkrunner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/livesummary"
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
// lease before it reported fails the run, naming the worker.

// runWorkload sends the workload itself, or through workers when the run asks for several.
func (x *execution) runWorkload(ctx context.Context, fields map[string]any) error {
	if x.plan.distributed() {
		return x.distribute(ctx, fields)
	}
	return x.workload(ctx, fields)
}

// distribute fans the run's workers out, waits for them and merges their records.
func (x *execution) distribute(ctx context.Context, fields map[string]any) error {
	r, id, n := x.r, x.plan.id(), x.plan.senders
	if err := os.MkdirAll(filepath.Dir(r.runs.WorkerRecordsPath(id, 0)), 0o755); err != nil {
		return fmt.Errorf("cannot create the workers' folder: %v", err)
	}
	workers, err := r.runs.CreateWorkers(ctx, id, n)
	if err != nil {
		return fmt.Errorf("cannot create the run's workers: %v", err)
	}
	for _, w := range workers {
		if w.Status != evalrun.WorkerQueued {
			continue
		}
		data := events.RunWorkerQueued{RunID: id, Worker: w.Index, Workers: n}
		if err := r.deps.Events.Send(ctx, events.TypeRunWorkerQueued, w.ID()+"/queued", id, data); err != nil && !errors.Is(err, cloudevent.ErrNoSink) {
			r.log.Warnw("worker.queued not delivered; the workers' sweep takes it", "run", id, "worker", w.Index, "error", err)
		}
	}
	r.runs.Logf(ctx, id, "Fanned out %d workers; each sends the whole workload", n)
	workers, lost := x.await(ctx, n)
	// The records the workers left are merged even when one was lost or the run was cancelled,
	// so the partial result covers what was sent.
	m, err := openMerge(r.runs, id, workers)
	if err != nil {
		return err
	}
	defer m.close()
	x.merge = m
	x.seq = 0
	x.progress.resetPlanned()          // the merge plans the whole run's requests again (the workers' counts stay)
	mctx := context.WithoutCancel(ctx) // a cancel ended the workers; their records still merge
	werr := x.workload(mctx, fields)
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

// await follows the workers until every one ended, reporting their progress as the run's. It
// returns the workers as last read and, when one was lost or never claimed, the error that
// fails the run.
func (x *execution) await(ctx context.Context, n int) ([]*evalrun.Worker, error) {
	r, id := x.r, x.plan.id()
	var inFlight atomic.Int64
	x.progress.setInFlight(inFlight.Load)
	tick := time.NewTicker(r.settings.PollInterval)
	defer tick.Stop()
	unclaimed, fanned := time.Duration(x.plan.timeout)*time.Second, time.Now()
	var stopped time.Time // when the run was cancelled or its runner began shutting down
	workers := make([]*evalrun.Worker, n)
	for {
		ended := 0
		var planned, completed, succeeded, failed, flying int64
		for k := range n {
			w, err := r.runs.LoadWorker(context.WithoutCancel(ctx), evalrun.WorkerID(id, k))
			if err != nil {
				if workers[k] == nil {
					workers[k] = &evalrun.Worker{RunID: id, Index: k, Workers: n, Status: evalrun.WorkerQueued}
				}
				continue // the store may be briefly unavailable; read it again next tick
			}
			workers[k] = w
			planned, completed, succeeded, failed = planned+w.Planned, completed+w.Completed, succeeded+w.Succeeded, failed+w.Failed
			switch {
			case w.Terminal():
				ended++
			case w.Status == evalrun.WorkerRunning:
				flying += w.InFlight
				if lostErr := x.checkLost(ctx, w); lostErr != nil {
					return workers, lostErr
				}
			case w.Status == evalrun.WorkerQueued && stopped.IsZero() && time.Since(fanned) > unclaimed:
				err := fmt.Errorf("worker %d of %d was not claimed by any benchmark-runner within %d s", k, n, x.plan.timeout)
				x.abandon(ctx, w, err.Error())
				return workers, err
			}
		}
		x.mergeLive(workers)
		x.progress.setCounts(planned, completed, succeeded, failed)
		inFlight.Store(flying)
		if phase := workers[0].Phase; phase != "" && phase != x.progress.currentPhase() {
			x.setPhase(ctx, phase)
		}
		if ended == n {
			return workers, nil
		}
		if ctx.Err() != nil && stopped.IsZero() {
			stopped = time.Now() // the workers see the cancel themselves within a poll interval
		}
		if !stopped.IsZero() && time.Since(stopped) > 3*r.settings.LeaseTTL {
			return workers, nil // merge what they wrote; a worker still going is cut off
		}
		<-tick.C // not ctx: after a cancel the workers still end and report
	}
}

// mergeLive makes the run's live summary the merge of its workers' latest ones (their sketches
// merge into the sketch of every request sent so far; percentiles are never averaged).
func (x *execution) mergeLive(workers []*evalrun.Worker) {
	merged := livesummary.New()
	for _, w := range workers {
		if w == nil || len(w.LiveSummary) == 0 {
			continue
		}
		one := livesummary.New()
		if err := json.Unmarshal(w.LiveSummary, one); err != nil {
			x.r.log.Warnw("a worker's live summary is unreadable; the run's leaves it out", "run", x.plan.id(), "worker", w.Index, "error", err)
			continue
		}
		if err := merged.Merge(one); err != nil {
			x.r.log.Warnw("a worker's live summary does not merge; the run's leaves it out", "run", x.plan.id(), "worker", w.Index, "error", err)
		}
	}
	x.progress.setLive(merged)
}

// checkLost reports a running worker nobody holds a lease on: its runner died. The worker is
// marked failed under a lease of the owner's, so its runner, were it to come back, is fenced out.
func (x *execution) checkLost(ctx context.Context, w *evalrun.Worker) error {
	r := x.r
	if _, err := r.deps.Store.LeaseHolder(ctx, evalrun.WorkerLeaseName(w.ID())); !errors.Is(err, state.ErrNotFound) {
		return nil
	}
	// It may have ended and released its lease between the two reads.
	if again, err := r.runs.LoadWorker(ctx, w.ID()); err != nil || again.Terminal() {
		return nil
	}
	owner := w.OwnerInstanceID
	if owner == "" {
		owner = "an unknown instance"
	}
	err := fmt.Errorf("worker %d of %d was lost: %s stopped renewing its lease before the worker reported a result (the process crashed or was killed)",
		w.Index, w.Workers, owner)
	x.abandon(ctx, w, err.Error())
	r.metrics.Lost.Inc()
	return err
}

// abandon ends a worker that will never report, fenced by a lease the owner takes on it.
func (x *execution) abandon(ctx context.Context, w *evalrun.Worker, msg string) {
	r := x.r
	ctx = context.WithoutCancel(ctx)
	lease, err := r.deps.Store.AcquireLease(ctx, evalrun.WorkerLeaseName(w.ID()), r.owner(), r.settings.LeaseTTL)
	if err != nil {
		return // its runner came back; it sees the run ended and stops
	}
	defer func() { _ = r.deps.Store.ReleaseLease(ctx, lease) }()
	_, _ = r.runs.TransitionWorker(ctx, w.ID(), []string{evalrun.WorkerQueued, evalrun.WorkerRunning}, evalrun.WorkerFailed, lease.Fence(),
		func(w *evalrun.Worker) error {
			w.Error, w.FinishedAt = msg, evalrun.Now()
			return nil
		})
}

// mergeSource replays the workers' records stage by stage: every worker sends the same stages in
// the same order, numbered by execution.seq.
type mergeSource struct {
	workers []*evalrun.Worker
	readers []*recordReader
}

func openMerge(runs *evalrun.Repo, id string, workers []*evalrun.Worker) (*mergeSource, error) {
	m := &mergeSource{workers: workers}
	for _, w := range workers {
		f, err := os.Open(runs.WorkerRecordsPath(id, w.Index))
		if errors.Is(err, os.ErrNotExist) {
			m.readers = append(m.readers, &recordReader{done: true})
			continue
		}
		if err != nil {
			m.close()
			return nil, fmt.Errorf("cannot read worker %d's records: %v", w.Index, err)
		}
		m.readers = append(m.readers, &recordReader{f: f, dec: json.NewDecoder(bufio.NewReaderSize(f, 64<<10))})
	}
	return m, nil
}

func (m *mergeSource) close() {
	for _, rd := range m.readers {
		if rd.f != nil {
			_ = rd.f.Close()
		}
	}
}

// replay feeds stage seq's records of every worker through the run's sinks and artifact, then
// fails the stage as a worker's own stage failed.
func (m *mergeSource) replay(x *execution, seq int, measured bool, sink sinkFunc) error {
	for _, rd := range m.readers {
		for {
			rec, ok := rd.peek()
			if !ok || recordSeq(rec) > seq {
				break
			}
			rd.next = nil
			if recordSeq(rec) < seq || !measured {
				continue
			}
			delete(rec.Metadata, "seq")
			gaps := takeGaps(rec.Metadata)
			x.mu.Lock()
			x.samples.Add(*rec, gaps, x.sinks(sink, *rec)...)
			x.mu.Unlock()
			if err := x.records.Record(*rec); err != nil {
				return err
			}
		}
	}
	for _, w := range m.workers {
		if w.FailedStage != nil && *w.FailedStage == seq {
			return workerError(w)
		}
	}
	return nil
}

// unreached is the error of a worker that failed before or after every stage the merge
// replayed (nil when every worker succeeded or was cancelled).
func (m *mergeSource) unreached() error {
	for _, w := range m.workers {
		if w.Status == evalrun.WorkerFailed {
			return workerError(w)
		}
	}
	return nil
}

// rateStart is when the first worker's rate stages began (Unix seconds; 0: none).
func (m *mergeSource) rateStart() float64 {
	first := 0.0
	for _, w := range m.workers {
		if w.RateStartedAt > 0 && (first == 0 || w.RateStartedAt < first) {
			first = w.RateStartedAt
		}
	}
	return first
}

func workerError(w *evalrun.Worker) error {
	if w.Status == evalrun.WorkerCancelled {
		return errCancelled
	}
	msg := w.Error
	if msg == "" {
		msg = "it ended " + w.Status
	}
	if strings.HasPrefix(msg, "worker ") {
		return errors.New(msg)
	}
	return fmt.Errorf("worker %d of %d failed: %s", w.Index, w.Workers, msg)
}

// recordReader reads one worker's records in order; a torn last line (a worker cut off
// mid-write) ends it.
type recordReader struct {
	f    *os.File
	dec  *json.Decoder
	next *loadgen.Record
	done bool
}

func (rd *recordReader) peek() (*loadgen.Record, bool) {
	if rd.next != nil {
		return rd.next, true
	}
	if rd.done {
		return nil, false
	}
	var rec loadgen.Record
	if err := rd.dec.Decode(&rec); err != nil {
		rd.done = true
		return nil, false
	}
	normalizeMetadata(rec.Metadata)
	rd.next = &rec
	return rd.next, true
}

// normalizeMetadata gives metadata read back from JSON the types the workload wrote: whole
// numbers as int, the inter-token gaps as []float64.
func normalizeMetadata(meta map[string]any) {
	for k, v := range meta {
		switch v := v.(type) {
		case float64:
			if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
				meta[k] = int(v)
			}
		case []any:
			if k == "inter_token_ms" {
				gaps := make([]float64, 0, len(v))
				for _, g := range v {
					if f, ok := g.(float64); ok {
						gaps = append(gaps, f)
					}
				}
				meta[k] = gaps
			}
		}
	}
}

func recordSeq(rec *loadgen.Record) int {
	seq, _ := rec.Metadata["seq"].(int)
	return seq
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
	if err != nil || run.Status() != evalrun.StatusRunning {
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
	x.records, x.samples = loadgen.NewJSONLWriter(f), evalrun.NewSamples()
	x.total = x.samples.NewBuilder(x.plan.targets)
	x.totalSinks = []*evalrun.Builder{x.total}
	r.runs.Logf(ctx, w.RunID, "Worker %d of %d started on %s", w.Index, w.Workers, r.owner())

	wctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		x.progress.watch(wctx, cancel, r.settings.PollInterval, r.settings.ReportInterval)
	}()
	x.origin = time.Now()
	werr := x.workload(wctx, map[string]any{})
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
