package benchmarkrunner

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/state"
)

// Name is the function's Knative Service name.
const Name = "benchmark-runner"

// Consumes lists the event types the function receives at /events.
var Consumes = []string{events.TypeRunQueued, events.TypeRunWorkerQueued}

// Settings tune the runner, read from the environment at start (ReadSettings); the fields
// without a variable are fixed.
type Settings struct {
	// MaxConcurrent bounds the runs one instance executes at once (LENS_MAX_CONCURRENT_RUNS, 1-64).
	MaxConcurrent int `env:"LENS_MAX_CONCURRENT_RUNS" envDefault:"1"`
	// LeaseTTL is a run's lease, renewed every third of it (LENS_LEASE_TTL).
	LeaseTTL time.Duration `env:"LENS_LEASE_TTL" envDefault:"15s"`
	// SweepInterval is the period of the queue sweep and lost-runner checks (LENS_SWEEP_INTERVAL).
	SweepInterval time.Duration `env:"LENS_SWEEP_INTERVAL" envDefault:"2s"`
	// PollInterval is how often a run checks for a cancel (250ms).
	PollInterval time.Duration
	// ReportInterval is how often progress, live metrics and the heartbeat are written (1s).
	ReportInterval time.Duration
	// ScrapeInterval is how often the endpoint's /metrics is sampled during a run
	// (LENS_SCRAPE_INTERVAL, 10ms-1h).
	ScrapeInterval time.Duration `env:"LENS_SCRAPE_INTERVAL" envDefault:"1s"`
	// MaxWorkers bounds the parallelism workers one instance sends at once
	// (LENS_MAX_CONCURRENT_WORKERS, 1-64; 32: one instance can send a whole run's workers).
	MaxWorkers int `env:"LENS_MAX_CONCURRENT_WORKERS" envDefault:"32"`
	// WorkerHold is how long a worker event's delivery is held open while the worker runs
	// (540 s, inside Knative's 600 s request timeout), so Knative routes the next one elsewhere.
	WorkerHold time.Duration
	// WorkerSweepGrace is how long a queued worker is left to its event before an instance's
	// sweep takes it (30 s: time for Knative to start a pod for it).
	WorkerSweepGrace time.Duration
	// PrometheusURL is the Prometheus whose HTTP API serving evidence is read from
	// (LENS_PROMETHEUS_URL, an http(s) URL; empty: the runner scrapes /metrics itself).
	PrometheusURL string `env:"LENS_PROMETHEUS_URL"`
	// PrometheusTargetsDir is a directory Prometheus discovers scrape targets from (file_sd;
	// LENS_PROMETHEUS_TARGETS_DIR): a benchmarked endpoint Prometheus does not scrape yet is
	// listed there for the run's duration. Empty: none written.
	PrometheusTargetsDir string `env:"LENS_PROMETHEUS_TARGETS_DIR"`
}

// Validate checks the ranges and the Prometheus URL, and sets the fixed intervals.
func (s *Settings) Validate() error {
	if s.MaxConcurrent < 1 || s.MaxConcurrent > 64 {
		return fmt.Errorf("LENS_MAX_CONCURRENT_RUNS=%d is not an integer in 1-64", s.MaxConcurrent)
	}
	if s.MaxWorkers < 1 || s.MaxWorkers > 64 {
		return fmt.Errorf("LENS_MAX_CONCURRENT_WORKERS=%d is not an integer in 1-64", s.MaxWorkers)
	}
	if s.LeaseTTL == 0 {
		return errors.New("LENS_LEASE_TTL must be a positive duration")
	}
	if s.SweepInterval == 0 {
		return errors.New("LENS_SWEEP_INTERVAL must be a positive duration")
	}
	if s.ScrapeInterval < 10*time.Millisecond || s.ScrapeInterval > time.Hour {
		return fmt.Errorf("LENS_SCRAPE_INTERVAL=%s is not a duration from 10ms to 1h", s.ScrapeInterval)
	}
	if s.PrometheusURL = strings.TrimRight(strings.TrimSpace(s.PrometheusURL), "/"); s.PrometheusURL != "" {
		if u, err := url.Parse(s.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("LENS_PROMETHEUS_URL is not an http(s) URL such as http://127.0.0.1:9090")
		}
	}
	s.PollInterval = cmp.Or(s.PollInterval, 250*time.Millisecond)
	s.ReportInterval = cmp.Or(s.ReportInterval, time.Second)
	s.WorkerHold = cmp.Or(s.WorkerHold, 540*time.Second)
	s.WorkerSweepGrace = cmp.Or(s.WorkerSweepGrace, 30*time.Second)
	return nil
}

// ReadSettings reads the runner's settings through the runtime's environment reader.
func ReadSettings(c fn.Config) (Settings, error) {
	var s Settings
	err := c.ReadSettings(&s)
	return s, err
}

// Build is the function's fn.Builder.
func Build(_ context.Context, d fn.Deps) (*fn.Function, error) {
	s, err := ReadSettings(d.Config)
	if err != nil {
		return nil, err
	}
	sealer, err := d.Config.Sealer()
	if err != nil {
		return nil, err
	}
	r := NewRunner(d, s, &evalrun.Repo{Store: d.Store, Sealer: sealer, DataDir: d.Config.DataDir})
	return &fn.Function{
		Events: map[string]cloudevent.Handler{events.TypeRunQueued: r.onQueued, events.TypeRunWorkerQueued: r.onWorkerQueued},
		Start:  r.Sweep,
		Close:  r.Close,
	}, nil
}

// Runner claims and executes benchmark runs.
type Runner struct {
	deps     fn.Deps
	client   *http.Client // to the endpoints, through the operator's endpoint policy
	log      *fn.Logger
	runs     *evalrun.Repo
	uses     *inventory.Repo // the executions' use lists, released when a run ends
	settings Settings
	pool     *leasedrun.Pool // the runs this instance owns
	workers  *leasedrun.Pool // the parallelism workers it sends
	metrics  runnerMetrics
}

// runnerMetrics are the pool's job metrics (leasedrun.Metrics) with the runner's own.
type runnerMetrics struct {
	leasedrun.Metrics
	requests *prometheus.CounterVec
	workers  prometheus.Counter
}

func newRunnerMetrics(reg *prometheus.Registry) runnerMetrics {
	m := runnerMetrics{
		Metrics: leasedrun.NewMetrics(reg, leasedrun.MetricOpts{
			Started: prometheus.Opts{Name: "lens_benchmark_runs_started_total",
				Help: "Benchmark runs this instance claimed and started."},
			Finished: prometheus.Opts{Name: "lens_benchmark_runs_finished_total",
				Help: "Benchmark runs this instance finished, by status (succeeded, failed, cancelled, lease_lost)."},
			FinishedBy: "status",
			Active: prometheus.Opts{Name: "lens_benchmark_runs_active",
				Help: "Benchmark runs executing on this instance now."},
			Lost: prometheus.Opts{Name: "lens_benchmark_lost_runners_total",
				Help: "Runs this instance failed because their runner's lease expired."},
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_benchmark_requests_total",
			Help: "Benchmark requests this instance completed, by outcome (success, failure)."}, []string{"outcome"}),
		workers: prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_benchmark_workers_started_total",
			Help: "Parallelism workers of benchmark runs this instance claimed and started."}),
	}
	reg.MustRegister(m.requests, m.workers)
	return m
}

// NewRunner returns a runner; Sweep runs its queue sweep and lost-runner checks.
func NewRunner(d fn.Deps, s Settings, runs *evalrun.Repo) *Runner {
	r := &Runner{deps: d, log: d.Log, runs: runs, uses: &inventory.Repo{Store: d.Store, Sealer: runs.Sealer}, settings: s,
		client: endpointClient(d.Egress), metrics: newRunnerMetrics(d.Metrics.Registry)}
	r.pool = leasedrun.New(leasedrun.Config{Leases: d.Store, Owner: r.owner(), LeaseTTL: s.LeaseTTL, MaxConcurrent: s.MaxConcurrent,
		SweepInterval: s.SweepInterval, LeaseName: evalrun.LeaseName, Claim: r.claim, Queued: r.queued, Reap: r.reapLost,
		Log: d.Log, QuietErrors: []error{state.ErrUnavailable}})
	r.workers = leasedrun.New(leasedrun.Config{Leases: d.Store, Owner: r.owner(), LeaseTTL: s.LeaseTTL, MaxConcurrent: max(s.MaxWorkers, 1),
		SweepInterval: s.SweepInterval, LeaseName: evalrun.WorkerLeaseName, Claim: r.claimWorker, Queued: r.queuedWorkers,
		Log: d.Log, QuietErrors: []error{state.ErrUnavailable}})
	return r
}

// endpointClient is the client of the probes and the monitor (the load itself goes through the
// engine's own lean client with Config.Dial): the load engine's tuning (loadgen.TuneTransport:
// no per-host cap, no gzip, small per-connection buffers) on a transport that dials only where
// the endpoint policy allows, redirects included.
func endpointClient(p *egress.Policy) *http.Client {
	t := p.Transport()
	loadgen.TuneTransport(t)
	return &http.Client{Transport: t, CheckRedirect: p.CheckRedirect}
}

func (r *Runner) owner() string { return r.deps.Config.InstanceID }

func (r *Runner) onQueued(ctx context.Context, e cloudevent.Event) error {
	var p events.RunQueued
	if err := e.DecodeData(&p); err != nil {
		return err
	}
	started, err := r.pool.TryStart(ctx, p.RunID)
	if err == nil && !started {
		r.log.Debugw("run left for another runner or the sweep", "run", p.RunID)
	}
	return err
}

// claim moves the queued run to running under lease and returns its job.
func (r *Runner) claim(ctx context.Context, id string, lease state.Lease) (leasedrun.Job, error) {
	owner, pid := r.owner(), os.Getpid()
	now := evalrun.Now()
	run, err := r.runs.Transition(ctx, id, []string{evalrun.StatusQueued}, evalrun.StatusRunning, lease.Fence(), func(run *evalrun.Run) error {
		run.StartedAt, run.HeartbeatAt, run.OwnerInstanceID, run.OwnerPID = &now, &now, &owner, &pid
		run.ProgressPercent, run.ProgressMessage = evalrun.Ptr(0.0), evalrun.Ptr("Starting")
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.metrics.Started.Inc()
	return func(ctx context.Context, held *leasedrun.Held) { r.execute(ctx, run, held) }, nil
}

// execute runs the benchmark with the lease renewed, records the outcome and announces it.
func (r *Runner) execute(ctx context.Context, run *evalrun.Run, held *leasedrun.Held) {
	r.metrics.Active.Inc()
	defer r.metrics.Active.Dec()
	id := run.ID
	r.runs.Logf(ctx, id, "Started on %s", r.owner())
	res := r.benchmark(ctx, run, held.HeldLease)
	held.StopRenewing()
	if errors.Is(context.Cause(ctx), state.ErrLeaseLost) {
		r.metrics.Finished.WithLabelValues("lease_lost").Inc()
		r.log.Warnw("lease lost: another instance owns the run now", "run", id)
		return // the new owner or the sweep decides; our writes would be fenced anyway
	}
	r.finish(context.WithoutCancel(ctx), run, held.HeldLease, res)
}

// finish gives back the run's use of its deployment, stores the outcome, releases the lease
// and emits run.finished.
func (r *Runner) finish(ctx context.Context, run *evalrun.Run, c *state.HeldLease, res *result) {
	id := run.ID
	// The closing log line goes first: a watcher's stream ends at the terminal status, so a line
	// appended after it would never reach the watcher (nor a reader of the finished run's stream).
	if res.err != "" {
		r.runs.Logf(ctx, id, "Finished %s: %s", res.status, res.err)
	} else {
		r.runs.Logf(ctx, id, "Finished %s", res.status)
	}
	// The use of the deployment goes before the terminal status: whoever sees the run ended
	// (the orchestrator, a user deleting the deployment) finds it free. The load is over by
	// now; should this process die before the status is written, the lost-runner sweep ends
	// the run.
	r.release(ctx, run)
	finished, err := r.runs.Transition(ctx, id, []string{evalrun.StatusRunning, evalrun.StatusCancelling}, res.status, c.Fence(), func(run *evalrun.Run) error {
		res.apply(run)
		return nil
	})
	if err != nil {
		r.log.Errorw("could not record the run's outcome", "run", id, "status", res.status, "error", err)
		r.runs.Logf(ctx, id, "Could not record the outcome %s: %v", res.status, err)
		return
	}
	r.metrics.Finished.WithLabelValues(res.status).Inc()
	_ = r.deps.Store.ReleaseLease(ctx, c.Lease())
	r.announce(ctx, finished)
}

// release gives up the run's use of its deployment execution (so it may be deleted again),
// before the run's terminal status is written.
func (r *Runner) release(ctx context.Context, run *evalrun.Run) {
	if err := r.uses.ReleaseUse(ctx, evalrun.Str(run.DeploymentExecutionID), run.ID); err != nil {
		r.log.Warnw("could not release the run's use of its execution", "run", run.ID, "error", err)
	}
}

func (r *Runner) announce(ctx context.Context, run *evalrun.Run) {
	var m evalrun.Metrics
	evalrun.Decode(run.Metrics, &m)
	data := events.RunFinished{RunID: run.ID, Status: run.Status, Metrics: evalrun.Headline(m)}
	if msg := run.ErrorText(); msg != "" {
		data.Error = &msg
	}
	data.SLA = run.SLA
	if err := r.deps.Events.Send(ctx, events.TypeRunFinished, run.ID+"/finished", run.ID, data); err != nil && !errors.Is(err, cloudevent.ErrNoSink) {
		r.log.Warnw("run.finished not delivered", "run", run.ID, "error", err)
	}
}

// queued lists the queued runs, oldest first (the pool's queue sweep).
func (r *Runner) queued(ctx context.Context) ([]string, error) {
	runs, err := r.runs.ListStatus(ctx, 100, evalrun.StatusQueued)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(runs))
	for i := len(runs) - 1; i >= 0; i-- {
		ids = append(ids, runs[i].ID)
	}
	return ids, nil
}

// reapLost ends active runs nobody holds a lease on: their runner died. A running run becomes
// failed; one that was being cancelled becomes cancelled.
func (r *Runner) reapLost(ctx context.Context) error {
	active, err := r.runs.ListStatus(ctx, 500, evalrun.StatusRunning, evalrun.StatusCancelling)
	if err != nil {
		return err
	}
	for _, run := range active {
		from := run.Status
		if from != evalrun.StatusRunning && from != evalrun.StatusCancelling {
			// A run listed with a terminal status has its outcome, and a transition from that
			// status would overwrite it with "runner lost". The Redis store leaves out records
			// that left the listed statuses between its index pick and its read; this keeps the
			// sweep safe over any state.Store that does not.
			continue
		}
		if _, err := r.deps.Store.LeaseHolder(ctx, evalrun.LeaseName(run.ID)); !errors.Is(err, state.ErrNotFound) {
			continue
		}
		if r.pool.Running(run.ID) {
			continue // this instance runs it and is taking its lease again
		}
		owner := evalrun.Str(run.OwnerInstanceID)
		if owner == "" {
			owner = "an unknown instance"
		}
		msg := fmt.Sprintf("The runner was lost: %s stopped renewing its lease on this run (the process crashed or was killed)", owner)
		to := evalrun.StatusFailed
		if from == evalrun.StatusCancelling {
			to = evalrun.StatusCancelled
		}
		// Only from the active status the listing saw: a run that ended (or was cancelled) since
		// is left as it is now (it released its use as it ended). The use goes first, as in
		// finish.
		r.release(ctx, run)
		partial, n := r.partialMetrics(run)
		ended, err := r.runs.Transition(ctx, run.ID, []string{from}, to, state.Fence{}, func(run *evalrun.Run) error {
			run.Error, run.FinishedAt, run.ProgressMessage = rawjson.Some(msg), evalrun.Ptr(evalrun.Now()), evalrun.Ptr("Runner lost")
			if partial != nil && run.Metrics == nil {
				// What the records on disk support: the run is partial, and says so.
				run.Metrics, run.Partial = evalrun.JSON(partial), evalrun.Ptr(true)
				run.PartialReason = evalrun.Ptr(fmt.Sprintf("The runner was lost after %d requests were recorded; "+
					"the metrics are computed from those records only.", n))
			}
			return nil
		})
		if err == nil {
			r.metrics.Lost.Inc()
			r.runs.Logf(ctx, run.ID, "%s: %s", to, msg)
			r.log.Warnw("ended a run whose runner was lost", "run", run.ID, "owner", owner, "status", to)
			r.announce(ctx, ended)
			continue
		}
		// Not ended here: if it is still active (its status moved on meanwhile, a cancel say),
		// it still holds its deployment, so take back the use released above; a run that ended
		// meanwhile released its own.
		if now, gerr := r.runs.Load(ctx, run.ID); gerr == nil && evalrun.Active(now.Status) {
			if aerr := r.uses.AcquireUse(ctx, evalrun.Str(run.DeploymentExecutionID), run.ID); aerr != nil {
				r.log.Warnw("could not take back the use of a run left active", "run", run.ID, "error", aerr)
			}
		}
	}
	return nil
}

// maxPartialRecords bounds the records read for a lost run's partial metrics.
const maxPartialRecords = 2_000_000

// partialMetrics computes a lost run's metrics from the per-request records its runner had
// written (a truncated last line is skipped); nil when there are none.
func (r *Runner) partialMetrics(run *evalrun.Run) (evalrun.Metrics, int) {
	f, err := os.Open(r.runs.RecordsPath(run.ID))
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	b := evalrun.NewBuilder(run.SLATargets)
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	n := 0
	for n < maxPartialRecords {
		var rec loadgen.Record
		if err := dec.Decode(&rec); err != nil {
			break // the end, or the line the runner was writing when it died
		}
		b.Add(rec, nil)
		n++
	}
	if n == 0 {
		return nil, 0
	}
	return b.Metrics(artifactsURI(run.ID) + "per-request-jsonl"), n
}

// Sweep starts queued runs this instance has room for and ends runs whose runner was lost,
// until ctx ends (the function's Start hook: the runtime cancels it when the drain begins).
func (r *Runner) Sweep(ctx context.Context) {
	done := make(chan struct{})
	go func() { defer close(done); r.workers.Sweep(ctx) }()
	r.pool.Sweep(ctx)
	<-done
}

// Close cancels the runs in flight and waits for them to record their end.
func (r *Runner) Close(ctx context.Context) error {
	return errors.Join(r.pool.Close(ctx), r.workers.Close(ctx))
}
