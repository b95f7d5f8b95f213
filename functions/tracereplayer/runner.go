package tracereplayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

// Name is the function's Knative Service name.
const Name = "trace-replayer"

// Backends this stage runs: its own engine, and AIPerf where the aiperf command is installed.
const (
	Backend       = "trace-replayer"
	BackendAIPerf = "aiperf"
)

// Consumes lists the event types the function receives at /events.
var Consumes = []string{events.TypeTaskQueued}

// Settings tune the runner, read from the environment at start (fn.Config.ReadSettings).
type Settings struct {
	// MaxConcurrent bounds the replays one instance runs at once (LENS_MAX_CONCURRENT_TASKS).
	MaxConcurrent int `env:"LENS_MAX_CONCURRENT_TASKS" envDefault:"1"`
	// LeaseTTL is how long a task's runner lease lives unless renewed, every third of it
	// (LENS_LEASE_TTL).
	LeaseTTL time.Duration `env:"LENS_LEASE_TTL" envDefault:"15s"`
	// SweepInterval is how often the queue is swept and lost runners checked (LENS_SWEEP_INTERVAL).
	SweepInterval time.Duration `env:"LENS_SWEEP_INTERVAL" envDefault:"2s"`
	// PollInterval is how often a run checks for a stop request (not configurable; 250ms).
	PollInterval time.Duration
}

// Validate refuses no concurrency and zero durations, and sets the poll interval.
func (s *Settings) Validate() error {
	if s.MaxConcurrent < 1 {
		return fmt.Errorf("LENS_MAX_CONCURRENT_TASKS=%d is not a positive integer", s.MaxConcurrent)
	}
	if s.LeaseTTL == 0 {
		return errors.New("LENS_LEASE_TTL must be a positive duration")
	}
	if s.SweepInterval == 0 {
		return errors.New("LENS_SWEEP_INTERVAL must be a positive duration")
	}
	if s.PollInterval == 0 {
		s.PollInterval = 250 * time.Millisecond
	}
	return nil
}

// Runner claims and runs the tasks of one backend.
type Runner struct {
	backend  string
	version  string
	deps     fn.Deps
	log      *fn.Logger
	tasks    *simtask.Repo
	settings Settings
	replay   func(ctx context.Context, run *Run) (events.TaskReplayed, error)
	pool     *leasedrun.Pool
	metrics  leasedrun.Metrics
}

func newRunnerMetrics(reg *prometheus.Registry, prefix string) leasedrun.Metrics {
	return leasedrun.NewMetrics(reg, leasedrun.MetricOpts{
		Started: prometheus.Opts{Name: prefix + "_tasks_started_total",
			Help: "Simulation tasks this instance claimed and started."},
		Finished: prometheus.Opts{Name: prefix + "_tasks_finished_total",
			Help: "Replays this instance finished, by outcome (completed, cancelled, failed, lease_lost)."},
		FinishedBy: "outcome",
		Active: prometheus.Opts{Name: prefix + "_tasks_active",
			Help: "Replays running on this instance now."},
		Lost: prometheus.Opts{Name: prefix + "_lost_runners_total",
			Help: "Running tasks this instance failed because their runner's lease expired."},
	})
}

// Run is one claimed task on its way through a replay.
type Run struct {
	Task   *simtask.Task
	APIKey string
	Repo   *simtask.Repo
	Poll   time.Duration

	held *state.HeldLease // renewed while the replay writes with its fence
}

// ticker fires every poll interval (stop requests are checked on it).
func (r *Run) ticker() <-chan time.Time { return time.After(r.Poll) }

// Lease is the run's current lease.
func (r *Run) Lease() state.Lease { return r.held.Lease() }

// Fence is the fencing value the run's writes carry.
func (r *Run) Fence() state.Fence { return r.held.Fence() }

func (r *Runner) owner() string { return r.deps.Config.InstanceID }

// onQueued is the fast path: claim the announced task if this instance has a free slot.
func (r *Runner) onQueued(ctx context.Context, e cloudevent.Event) error {
	var p events.TaskQueued
	if err := e.DecodeData(&p); err != nil {
		return err
	}
	if p.Backend != r.backend {
		return nil // another backend's runner takes it
	}
	started, err := r.pool.TryStart(ctx, p.TaskID)
	if err != nil {
		return err
	}
	if !started {
		r.log.Debugw("task left for another runner or the sweep", "task", p.TaskID)
	}
	return nil
}

// claim moves the queued task to running under lease and returns its replay.
func (r *Runner) claim(ctx context.Context, id string, lease state.Lease) (leasedrun.Job, error) {
	pid := os.Getpid()
	owner := r.owner()
	t, err := r.tasks.Transition(ctx, id, []string{simtask.StatusQueued}, simtask.StatusRunning, lease.Fence(), func(t *simtask.Task) error {
		t.StartedAt, t.OwnerPID, t.OwnerInstanceID = simtask.Now(), &pid, &owner
		t.ProgressPercent, t.ProgressMessage, t.Internal.Phase = 0, "Starting "+r.backend, "replaying"
		version := r.version
		t.BackendVersion = &version
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.metrics.Started.Inc()
	key, keyErr := r.tasks.APIKey(t)
	return func(ctx context.Context, held *leasedrun.Held) {
		r.metrics.Active.Inc()
		defer r.metrics.Active.Dec()
		run := &Run{Task: t, held: held.HeldLease, APIKey: key, Repo: r.tasks, Poll: r.settings.PollInterval}
		if keyErr != nil {
			held.StopRenewing()
			r.fail(ctx, run, "the task's API key cannot be opened: "+keyErr.Error())
			return
		}
		r.execute(ctx, run, held)
	}, nil
}

// execute replays with the lease renewed, then hands the records to the analyzer.
func (r *Runner) execute(ctx context.Context, run *Run, held *leasedrun.Held) {
	id := run.Task.ID
	r.tasks.Logf(ctx, id, "Starting %s %s on %s", r.backend, r.version, r.owner())
	replayed, err := r.replay(ctx, run)
	if cause := context.Cause(ctx); errors.Is(cause, state.ErrLeaseLost) {
		held.StopRenewing()
		r.metrics.Finished.WithLabelValues("lease_lost").Inc()
		r.log.Warnw("lease lost: another instance owns the task now", "task", id)
		return // the new owner (or the janitor) decides the task's fate; writes would be fenced anyway
	}
	if err != nil {
		held.StopRenewing()
		r.metrics.Finished.WithLabelValues("failed").Inc()
		r.fail(context.WithoutCancel(ctx), run, err.Error())
		return
	}
	r.metrics.Finished.WithLabelValues(replayed.Outcome).Inc()
	// The note on disk outlives a store outage and this process: whoever finds the task without
	// a runner hands the replay off from it instead of failing the task.
	if err := writeHandOff(r.tasks.TaskDir(id), replayed); err != nil {
		r.log.Warnw("could not write the hand-off note", "task", id, "error", err)
	}
	handed := r.handOff(ctx, run, replayed) // the lease is still renewed while the store is down
	held.StopRenewing()                     // the lease is released or handed on next; no renewal may race that
	if !handed {
		return
	}
	bg := context.WithoutCancel(ctx)
	r.tasks.Logf(bg, id, "Replay %s: %s (%d requests); analyzing", replayed.Outcome, replayed.Message, replayed.Requests)
	// The analyzer takes the lease next, so release it before announcing the records.
	_ = r.deps.Store.ReleaseLease(bg, run.Lease())
	r.announce(bg, replayed)
}

// handOff moves the replayed task to its analysis phase, retrying for as long as the store is
// unavailable and the run lives. It reports false when the task could not be handed off; its
// note on disk lets the sweep do it later.
func (r *Runner) handOff(ctx context.Context, run *Run, replayed events.TaskReplayed) bool {
	id := run.Task.ID
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		_, err := r.tasks.Transition(ctx, id, []string{simtask.StatusRunning}, simtask.StatusRunning, run.Fence(),
			func(t *simtask.Task) error { toAnalysis(t, replayed); return nil })
		if err == nil {
			return true
		}
		if !errors.Is(err, state.ErrUnavailable) {
			r.log.Errorw("could not hand the task to the analyzer", "task", id, "error", err)
			return false
		}
		select {
		case <-ctx.Done():
			r.log.Warnw("the store stayed unavailable; the sweep hands the finished replay off later", "task", id)
			return false
		case <-time.After(wait):
		}
	}
}

// toAnalysis is the hand-off: the task waits for the analyzer with the replay's records. A
// replay that ran to its end shows 99 % until the analyzer completes it; one cut short keeps the
// share of the trace it got through (6 of 82 requests sent is not 99 %).
func toAnalysis(t *simtask.Task, replayed events.TaskReplayed) {
	t.Internal.Phase, t.Internal.RecordsPath, t.Internal.ReplayMessage = "analyzing", replayed.RecordsPath, replayed.Message
	t.Internal.ReplayOutcome = replayed.Outcome
	t.ProgressMessage = "Analyzing results"
	if replayed.Outcome == simtask.StatusCompleted {
		t.ProgressPercent = 99
	}
}

// announce tells the analyzer; its sweep finds the task anyway when the event is lost.
func (r *Runner) announce(ctx context.Context, replayed events.TaskReplayed) {
	if err := r.deps.Events.Send(ctx, events.TypeTaskReplayed, replayed.TaskID+"/replayed", replayed.TaskID, replayed); err != nil {
		r.log.Warnw("replayed event not delivered; the analyzer's sweep picks the task up", "task", replayed.TaskID, "error", err)
	}
}

// fail marks the run's task failed (fenced: a runner that lost its lease cannot).
func (r *Runner) fail(ctx context.Context, run *Run, message string) {
	message = secret.Redact(message, run.APIKey)
	_, err := r.tasks.Transition(ctx, run.Task.ID, []string{simtask.StatusRunning}, simtask.StatusFailed, run.Fence(), func(t *simtask.Task) error {
		t.ErrorMessage, t.CompletedAt, t.ProgressMessage = &message, simtask.Now(), "Simulation failed"
		t.LiveSummary = nil
		return nil
	})
	if err != nil {
		r.log.Warnw("could not mark the task failed", "task", run.Task.ID, "error", err)
	}
	r.tasks.Logf(ctx, run.Task.ID, "Failed: %s", message)
	_ = r.deps.Store.ReleaseLease(ctx, run.Lease())
}

// Sweep runs until ctx ends (the function's Start hook): at once and then every interval it
// starts queued tasks this instance has room for and fails running tasks whose runner lost its
// lease; whenever a slot frees it starts the next queued task without waiting for the tick.
func (r *Runner) Sweep(ctx context.Context) { r.pool.Sweep(ctx) }

// queued lists this backend's queued tasks, oldest first (the pool's queue sweep).
func (r *Runner) queued(ctx context.Context) ([]string, error) {
	page, err := r.deps.Store.List(ctx, state.Query{Kind: simtask.Kind, Status: []string{simtask.StatusQueued},
		Attrs: map[string]string{"backend": r.backend}, Limit: 100})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(page.Records))
	for i := len(page.Records) - 1; i >= 0; i-- {
		ids = append(ids, page.Records[i].ID)
	}
	return ids, nil
}

// reapLost takes over running tasks that nobody holds a lease on any more (their runner died or
// could not reach the store): a finished replay whose hand-off failed is handed off again from
// its note, a crashed replay's records on disk are analysed as a partial result, and only a task
// with neither is failed. A task in its analyzing phase is the analyzer's, which holds its own
// lease while it works.
func (r *Runner) reapLost(ctx context.Context) error {
	page, err := r.deps.Store.List(ctx, state.Query{Kind: simtask.Kind, Status: []string{simtask.StatusRunning},
		Attrs: map[string]string{"backend": r.backend}, Limit: 500})
	if err != nil {
		return err
	}
	for _, rec := range page.Records {
		t, err := simtask.Unmarshal(rec.Doc)
		if err != nil || t.Internal.Phase == "analyzing" {
			continue
		}
		if _, err := r.deps.Store.LeaseHolder(ctx, simtask.LeaseName(rec.ID)); !errors.Is(err, state.ErrNotFound) {
			continue
		}
		if r.pool.Running(rec.ID) {
			continue // this instance runs it and is taking its lease again
		}
		if err := r.takeOver(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// takeOver fences the lost runner out with a lease of its own, then hands the task off or fails it.
func (r *Runner) takeOver(ctx context.Context, t *simtask.Task) error {
	lease, err := r.deps.Store.AcquireLease(ctx, simtask.LeaseName(t.ID), r.owner(), r.settings.LeaseTTL)
	if errors.Is(err, state.ErrLeaseHeld) {
		return nil // its runner came back, or another sweep was faster
	}
	if err != nil {
		return err
	}
	defer func() { _ = r.deps.Store.ReleaseLease(context.WithoutCancel(ctx), lease) }()
	owner := "an unknown instance"
	if t.OwnerInstanceID != nil {
		owner = *t.OwnerInstanceID
	}
	lost := fmt.Sprintf("The runner was lost: %s stopped renewing its lease on this task (the process crashed or was killed)", owner)
	replayed, how, found := r.recoverReplay(t, lost)
	if !found {
		_, err = r.tasks.Transition(ctx, t.ID, []string{simtask.StatusRunning}, simtask.StatusFailed, lease.Fence(), func(t *simtask.Task) error {
			if t.Internal.Phase == "analyzing" {
				return errAnalyzing
			}
			t.ErrorMessage, t.CompletedAt, t.ProgressMessage, t.LiveSummary = &lost, simtask.Now(), "Simulation failed", nil
			return nil
		})
		if err == nil {
			r.metrics.Lost.Inc()
			r.tasks.Logf(ctx, t.ID, "Failed: %s", lost)
			r.log.Warnw("failed a task whose runner was lost", "task", t.ID, "owner", owner)
		}
		return ignoreRace(err)
	}
	_, err = r.tasks.Transition(ctx, t.ID, []string{simtask.StatusRunning}, simtask.StatusRunning, lease.Fence(), func(t *simtask.Task) error {
		if t.Internal.Phase == "analyzing" {
			return errAnalyzing
		}
		toAnalysis(t, replayed)
		return nil
	})
	if err != nil {
		return ignoreRace(err)
	}
	r.tasks.Logf(ctx, t.ID, "%s; analyzing", how)
	r.log.Warnw("handed off a replay its runner could not", "task", t.ID, "owner", owner, "how", how)
	_ = r.deps.Store.ReleaseLease(context.WithoutCancel(ctx), lease) // the analyzer takes it next
	r.announce(context.WithoutCancel(ctx), replayed)
	return nil
}

// ignoreRace drops the errors of a task that moved on meanwhile.
func ignoreRace(err error) error {
	if errors.Is(err, errAnalyzing) || errors.Is(err, state.ErrInvalidTransition) || errors.Is(err, state.ErrNotFound) ||
		errors.Is(err, state.ErrStaleFence) {
		return nil
	}
	return err
}

// recoverReplay finds what a lost runner left on disk: the note of a finished replay, else the
// records of one cut short, analysed as a partial result (cancelled when a stop was requested).
func (r *Runner) recoverReplay(t *simtask.Task, lost string) (events.TaskReplayed, string, bool) {
	dir := r.tasks.TaskDir(t.ID)
	if replayed, err := readHandOff(dir); err == nil && replayed.TaskID == t.ID {
		return replayed, fmt.Sprintf("Replay %s: %s (%d requests); handed off again after its runner could not", replayed.Outcome, replayed.Message, replayed.Requests), true
	}
	records := filepath.Join(dir, RecordsFile)
	if info, err := os.Stat(records); err != nil || !info.Mode().IsRegular() || info.Size() == 0 {
		return events.TaskReplayed{}, "", false
	}
	replayed := events.TaskReplayed{TaskID: t.ID, RecordsPath: records, Outcome: simtask.StatusFailed,
		Message: lost + "; the records it wrote are analysed as a partial result"}
	if t.Internal.CancelRequested {
		replayed.Outcome, replayed.Message = simtask.StatusCancelled, "stopped by request"
	}
	return replayed, lost + "; analysing the records it wrote as a partial result", true
}

// HandOffFile is the note a replay leaves in its task folder when it ends, before the task is
// handed to the analyzer, so the hand-off survives a store outage or a crash.
const HandOffFile = "replayed.json"

func writeHandOff(dir string, replayed events.TaskReplayed) error {
	raw, err := json.Marshal(replayed)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, HandOffFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, HandOffFile))
}

func readHandOff(dir string) (events.TaskReplayed, error) {
	var replayed events.TaskReplayed
	raw, err := os.ReadFile(filepath.Join(dir, HandOffFile))
	if err != nil {
		return replayed, err
	}
	return replayed, json.Unmarshal(raw, &replayed)
}

var errAnalyzing = errors.New("the task moved on to analysis")

// Close cancels the replays in flight and waits for them to record their end.
func (r *Runner) Close(ctx context.Context) error { return r.pool.Close(ctx) }
