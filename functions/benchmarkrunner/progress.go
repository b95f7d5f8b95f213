package benchmarkrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/livesummary"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/state"
)

// progressReporter is what an execution shows while it runs: its phase, its request counts and
// live summary, and its heartbeat, stored on the run (progress_percent, progress_message,
// live_metrics, phase, heartbeat_at) or, for a worker, on its worker record (its owner sums
// them for the run). It also watches the stored run for a cancel.
//
// Locks: store orders the stored progress: a phase change (memory and record) and a report
// (read and record) never interleave, so no stored entry pairs one phase with another phase's
// message, and a report never writes an older phase over a newer one. mu guards phase, inFlight
// and live. store is taken before mu, never the other way, and no other part's lock is taken
// while either is held. The counts are atomics: the senders add to them without a lock.
type progressReporter struct {
	runs    *evalrun.Repo
	runID   string
	claim   *state.HeldLease // fences every write
	worker  *evalrun.Worker  // set when the execution is one worker of a run
	started time.Time        // the execution's start (elapsed_seconds)

	store    sync.Mutex
	mu       sync.Mutex
	phase    string
	inFlight func() int64
	// live summarises the measured requests as they complete (live_metrics.summary): this
	// execution's own, or for the owner of a run with workers the merge of theirs.
	live *livesummary.Summary

	planned   atomic.Int64 // written by the workload (or the owner's await), read by the reports
	completed atomic.Int64
	succeeded atomic.Int64
	failed    atomic.Int64
}

func newProgress(runs *evalrun.Repo, plan *runPlan, claim *state.HeldLease, started time.Time) *progressReporter {
	return &progressReporter{runs: runs, runID: plan.id(), claim: claim, worker: plan.worker, started: started,
		inFlight: func() int64 { return 0 }, live: livesummary.New()}
}

// watch polls for a cancel and writes progress, live metrics and the heartbeat every report
// interval until ctx ends.
func (p *progressReporter) watch(ctx context.Context, cancel context.CancelCauseFunc, poll, every time.Duration) {
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if run, err := p.runs.Load(ctx, p.runID); err == nil && (run.Internal.CancelRequested || run.Status == evalrun.StatusCancelling ||
			p.worker != nil && run.Status != evalrun.StatusRunning) {
			cancel(errCancelled) // a worker also stops when its run ended without it (its owner failed it)
			return
		}
		if time.Since(last) >= every {
			last = time.Now()
			p.report(ctx)
		}
	}
}

// report writes the progress so far: on the run, or on a worker's record.
func (p *progressReporter) report(ctx context.Context) {
	if p.worker != nil {
		p.reportWorker(ctx)
		return
	}
	p.store.Lock()
	defer p.store.Unlock()
	p.mu.Lock()
	phase, inFlight := p.phase, p.inFlight
	summary := p.live.Snapshot(time.Now())
	p.mu.Unlock()
	done := p.completed.Load()
	pct := 0.0
	planned := p.planned.Load()
	if planned > 0 {
		pct = math.Round(min(99, 100*float64(done)/float64(planned))*10) / 10
	}
	live := evalrun.LiveMetrics{Phase: phase, PlannedRequests: planned, CompletedRequests: done,
		SuccessfulRequests: p.succeeded.Load(), FailedRequests: p.failed.Load(), InFlightRequests: inFlight(),
		ElapsedSeconds: math.Round(time.Since(p.started).Seconds()*10) / 10, Summary: &summary}
	_, _ = p.runs.Patch(ctx, p.runID, p.claim.Fence(), func(run *evalrun.Run) error {
		run.HeartbeatAt, run.ProgressPercent = evalrun.Ptr(evalrun.Now()), &pct
		run.ProgressMessage = evalrun.Ptr(fmt.Sprintf("%s: %d of %d requests completed", phase, done, planned))
		run.LiveMetrics = &live
		return nil
	})
}

// reportWorker writes a worker's progress on its record (the owner sums them for the run).
func (p *progressReporter) reportWorker(ctx context.Context) {
	p.mu.Lock()
	phase, inFlight := p.phase, p.inFlight
	summary, err := json.Marshal(p.live)
	p.mu.Unlock()
	if err != nil {
		summary = nil // the owner then shows the others' summaries; the counts still go
	}
	_, _ = p.runs.TransitionWorker(ctx, p.worker.ID(), []string{evalrun.WorkerRunning}, evalrun.WorkerRunning, p.claim.Fence(), func(w *evalrun.Worker) error {
		w.Planned, w.Completed, w.Succeeded, w.Failed = p.counts()
		w.InFlight, w.Phase, w.HeartbeatAt = inFlight(), phase, evalrun.Now()
		w.LiveSummary = summary
		return nil
	})
}

// setPhase records the phase the run enters; origin is the zero of the records' times (zero
// before the traffic), stored as benchmark_started_at when the first traffic phase begins.
func (p *progressReporter) setPhase(ctx context.Context, phase string, origin time.Time) {
	p.store.Lock()
	defer p.store.Unlock()
	p.mu.Lock()
	p.phase = phase
	p.mu.Unlock()
	if p.worker != nil {
		return // a worker reports its phase on its own record
	}
	now := evalrun.Now()
	_, _ = p.runs.Patch(ctx, p.runID, p.claim.Fence(), func(run *evalrun.Run) error {
		run.Phase, run.PhaseStartedAt, run.HeartbeatAt = &phase, &now, &now
		run.ProgressMessage = evalrun.Ptr(phase + ": starting") // not the last phase's count until the next report
		if phase != evalrun.PhasePreparingMonitoring && run.BenchmarkStartedAt == nil {
			started := now
			if !origin.IsZero() {
				started = evalrun.Timestamp(origin)
			}
			run.BenchmarkStartedAt = &started
		}
		return nil
	})
	p.runs.Logf(ctx, p.runID, "Phase %s", phase)
}

// notePhase is the phase the owner's merge replays: it is remembered, not stored (the workers'
// phases were stored as they ran).
func (p *progressReporter) notePhase(phase string) {
	p.store.Lock()
	defer p.store.Unlock()
	p.mu.Lock()
	p.phase = phase
	p.mu.Unlock()
}

func (p *progressReporter) currentPhase() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phase
}

// setInFlight is how the reports count the requests in flight from now on.
func (p *progressReporter) setInFlight(f func() int64) {
	p.mu.Lock()
	p.inFlight = f
	p.mu.Unlock()
}

// observe counts a measured request that completed and adds it to the live summary.
func (p *progressReporter) observe(rec loadgen.Record) {
	p.mu.Lock()
	p.live.Add(observation(rec), time.Now())
	p.mu.Unlock()
	p.completed.Add(1)
	if rec.Successful {
		p.succeeded.Add(1)
	} else {
		p.failed.Add(1)
	}
}

// addPlanned adds n requests to the planned count.
func (p *progressReporter) addPlanned(n int64) { p.planned.Add(n) }

// resetPlanned forgets the planned count (the owner's merge plans the run's requests again).
func (p *progressReporter) resetPlanned() { p.planned.Store(0) }

// setCounts makes the counts the sums of a run's workers' (the owner's await).
func (p *progressReporter) setCounts(planned, completed, succeeded, failed int64) {
	p.planned.Store(planned)
	p.completed.Store(completed)
	p.succeeded.Store(succeeded)
	p.failed.Store(failed)
}

// setLive makes the live summary the merge of a run's workers' (the owner's await).
func (p *progressReporter) setLive(s *livesummary.Summary) {
	p.mu.Lock()
	p.live = s
	p.mu.Unlock()
}

// counts are the planned, completed, succeeded and failed requests so far.
func (p *progressReporter) counts() (planned, completed, succeeded, failed int64) {
	return p.planned.Load(), p.completed.Load(), p.succeeded.Load(), p.failed.Load()
}

// observation is what a completed request adds to the live summary.
func observation(rec loadgen.Record) livesummary.Observation {
	o := livesummary.Observation{Successful: rec.Successful, LatencyMs: rec.LatencyMs, TTFTMs: -1, TPOTMs: -1, OutputTokens: rec.OutputTokens}
	if rec.TTFTMs != nil {
		o.TTFTMs = *rec.TTFTMs
	}
	if rec.TPOTMs != nil {
		o.TPOTMs = *rec.TPOTMs
	}
	if !rec.Successful {
		errText := ""
		if rec.Error != nil {
			errText = *rec.Error
		}
		o.Cause = livesummary.CauseOf(errText, rec.StatusCode)
	}
	return o
}
