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
	"strings"
	"sync/atomic"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/livesummary"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/state"
)

// ownerMerge is the owner's side of a run sent by workers (workers.go): it fans the workers
// out, follows them until every one ended (their summed counts, merged live summary and first
// worker's phase become the run's progress, through the progress reporter), fails the run when
// one is lost or never claimed, and replays their records stage by stage into the run's
// result.
//
// Locks: none. Only the execution's goroutine uses it; what it shares goes through the progress
// reporter's methods (which take that reporter's locks) and replay's add.
type ownerMerge struct {
	r       *Runner
	runID   string
	n       int // the run's workers (its parallelism)
	timeout int // how long (s) a queued worker may wait to be claimed, the run's resolved budget

	workers []*evalrun.Worker // as await last read them: the workers the replay merges
	readers []*recordReader   // each worker's records, in worker order, while replaying
}

func newOwnerMerge(r *Runner, plan *runPlan) *ownerMerge {
	return &ownerMerge{r: r, runID: plan.id(), n: plan.senders, timeout: plan.timeout}
}

// fanOut creates the run's workers and announces each queued one as an event any instance may
// take (the workers' sweep takes one whose event was lost).
func (m *ownerMerge) fanOut(ctx context.Context) error {
	r, id, n := m.r, m.runID, m.n
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
	return nil
}

// await follows the workers until every one ended, reporting their progress as the run's
// (origin is the zero of the records' times, for the phases it stores). It keeps the workers as
// last read and, when one was lost or never claimed, returns the error that fails the run.
func (m *ownerMerge) await(ctx context.Context, progress *progressReporter, origin time.Time) error {
	r, id, n := m.r, m.runID, m.n
	var inFlight atomic.Int64
	progress.setInFlight(inFlight.Load)
	tick := time.NewTicker(r.settings.PollInterval)
	defer tick.Stop()
	unclaimed, fanned := time.Duration(m.timeout)*time.Second, time.Now()
	var stopped time.Time // when the run was cancelled or its runner began shutting down
	m.workers = make([]*evalrun.Worker, n)
	workers := m.workers
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
				if lostErr := m.checkLost(ctx, w); lostErr != nil {
					return lostErr
				}
			case w.Status == evalrun.WorkerQueued && stopped.IsZero() && time.Since(fanned) > unclaimed:
				err := fmt.Errorf("worker %d of %d was not claimed by any benchmark-runner within %d s", k, n, m.timeout)
				m.abandon(ctx, w, err.Error())
				return err
			}
		}
		progress.setLive(m.mergeLive())
		progress.setCounts(planned, completed, succeeded, failed)
		inFlight.Store(flying)
		if phase := workers[0].Phase; phase != "" && phase != progress.currentPhase() {
			progress.setPhase(ctx, phase, origin)
		}
		if ended == n {
			return nil
		}
		if ctx.Err() != nil && stopped.IsZero() {
			stopped = time.Now() // the workers see the cancel themselves within a poll interval
		}
		if !stopped.IsZero() && time.Since(stopped) > 3*r.settings.LeaseTTL {
			return nil // merge what they wrote; a worker still going is cut off
		}
		<-tick.C // not ctx: after a cancel the workers still end and report
	}
}

// mergeLive is the run's live summary: the merge of its workers' latest ones (their sketches
// merge into the sketch of every request sent so far; percentiles are never averaged).
func (m *ownerMerge) mergeLive() *livesummary.Summary {
	merged := livesummary.New()
	for _, w := range m.workers {
		if w == nil || len(w.LiveSummary) == 0 {
			continue
		}
		one := livesummary.New()
		if err := json.Unmarshal(w.LiveSummary, one); err != nil {
			m.r.log.Warnw("a worker's live summary is unreadable; the run's leaves it out", "run", m.runID, "worker", w.Index, "error", err)
			continue
		}
		if err := merged.Merge(one); err != nil {
			m.r.log.Warnw("a worker's live summary does not merge; the run's leaves it out", "run", m.runID, "worker", w.Index, "error", err)
		}
	}
	return merged
}

// checkLost reports a running worker nobody holds a lease on: its runner died. The worker is
// marked failed under a lease of the owner's, so its runner, were it to come back, is fenced out.
func (m *ownerMerge) checkLost(ctx context.Context, w *evalrun.Worker) error {
	r := m.r
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
	m.abandon(ctx, w, err.Error())
	r.metrics.Lost.Inc()
	return err
}

// abandon ends a worker that will never report, fenced by a lease the owner takes on it.
func (m *ownerMerge) abandon(ctx context.Context, w *evalrun.Worker, msg string) {
	r := m.r
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

// open opens the records the workers left, for the replay (a worker that wrote none has none).
func (m *ownerMerge) open() error {
	for _, w := range m.workers {
		f, err := os.Open(m.r.runs.WorkerRecordsPath(m.runID, w.Index))
		if errors.Is(err, os.ErrNotExist) {
			m.readers = append(m.readers, &recordReader{done: true})
			continue
		}
		if err != nil {
			m.close()
			return fmt.Errorf("cannot read worker %d's records: %v", w.Index, err)
		}
		m.readers = append(m.readers, &recordReader{f: f, dec: json.NewDecoder(bufio.NewReaderSize(f, 64<<10))})
	}
	return nil
}

func (m *ownerMerge) close() {
	for _, rd := range m.readers {
		if rd.f != nil {
			_ = rd.f.Close()
		}
	}
}

// replay hands stage seq's measured records of every worker, in order, to add (with their
// inter-token gaps taken out of the metadata), then fails the stage as a worker's own stage
// failed. The stages are numbered as every worker sends them (execution.seq).
func (m *ownerMerge) replay(seq int, measured bool, add func(rec loadgen.Record, gaps []float64) error) error {
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
			if err := add(*rec, gaps); err != nil {
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
func (m *ownerMerge) unreached() error {
	for _, w := range m.workers {
		if w.Status == evalrun.WorkerFailed {
			return workerError(w)
		}
	}
	return nil
}

// rateStart is when the first worker's rate stages began (Unix seconds; 0: none).
func (m *ownerMerge) rateStart() float64 {
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
