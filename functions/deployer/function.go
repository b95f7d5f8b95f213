package deployer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// Name is the function's default service name.
const Name = "deployer"

// Consumes lists the event types the deployer handles.
var Consumes = []string{events.TypeDeploymentRequested, events.TypeDeploymentCleanupRequested}

// Provider names.
const (
	ProviderLocal   = "local"
	ProviderKnative = "knative"
)

// Provider brings a configuration up and down. Deploy fills d (endpoints, what it created) and
// calls save as soon as it created something, so a worker that dies mid-deployment leaves a
// record of it; Cleanup removes whatever d records and must succeed on a partial deployment.
type Provider interface {
	Deploy(ctx context.Context, d *Deployment, cfg deployconfig.Deployment, save func(context.Context) error) error
	Cleanup(ctx context.Context, d *Deployment) error
}

// EvidenceGatherer is a provider that can say what its platform offers about a ready
// deployment: the knative provider reads the cluster's serving pods, their nodes and the pods'
// warnings. The deployer stores what it returns on the execution when the deployment becomes
// ready, and refreshes it every EvidenceInterval while a run uses the execution, so a run's
// diagnostics can include it without any credential leaving the deployer.
type EvidenceGatherer interface {
	Evidence(ctx context.Context, d *Deployment, occasion string) inventory.ClusterEvidence
}

// DefaultEvidenceInterval is how often the cluster evidence of an execution in use is refreshed.
const DefaultEvidenceInterval = 30 * time.Second

// Settings are the deployer's knobs, read from the environment at start (ReadSettings).
type Settings struct {
	// LeaseTTL is a worker's lease on one deployment (LENS_LEASE_TTL).
	LeaseTTL time.Duration `env:"LENS_LEASE_TTL" envDefault:"15s"`
	// SweepInterval is how often orphaned deployments are looked for (LENS_SWEEP_INTERVAL).
	SweepInterval time.Duration `env:"LENS_SWEEP_INTERVAL" envDefault:"2s"`
	// DeployTimeout is the readiness wait of one deployment (LENS_DEPLOY_TIMEOUT).
	DeployTimeout time.Duration `env:"LENS_DEPLOY_TIMEOUT" envDefault:"2m"`
	// BinDir is where the local provider finds inference-sim and inference-router
	// (LENS_BIN_DIR; empty: the directory of the running executable).
	BinDir string `env:"LENS_BIN_DIR"`
	// LogDir holds the local provider's per-process logs (<data dir>/logs/deployments).
	LogDir string
	// TargetsDir is where the local provider writes each deployment's Prometheus file-SD
	// targets (LENS_PROMETHEUS_TARGETS_DIR; empty: none).
	TargetsDir string `env:"LENS_PROMETHEUS_TARGETS_DIR"`
	// EvidenceInterval is how often the cluster evidence of the executions runs use is
	// refreshed (0: DefaultEvidenceInterval).
	EvidenceInterval time.Duration
}

// Validate refuses zero durations.
func (s *Settings) Validate() error {
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"LENS_LEASE_TTL", s.LeaseTTL}, {"LENS_SWEEP_INTERVAL", s.SweepInterval}, {"LENS_DEPLOY_TIMEOUT", s.DeployTimeout}} {
		if v.d == 0 {
			return fmt.Errorf("%s must be a positive duration", v.name)
		}
	}
	return nil
}

// ReadSettings reads the deployer's settings through the runtime's environment reader and
// completes the directories the environment leaves out.
func ReadSettings(c fn.Config) (Settings, error) {
	var s Settings
	if err := c.ReadSettings(&s); err != nil {
		return s, err
	}
	if s.BinDir == "" {
		if exe, err := os.Executable(); err == nil {
			s.BinDir = filepath.Dir(exe)
		}
	}
	s.LogDir = filepath.Join(c.DataDir, "logs", "deployments")
	return s, nil
}

// ProviderFactory makes one provider of a deployer. A command wires the providers it links
// (Builder): the Knative image's deployer (cmd/deployer) has the local and the knative provider,
// the local stack's (cmd/deployer-local) only the local one, so it links none of the Kubernetes
// and Knative Serving packages the knative provider needs.
type ProviderFactory struct {
	Name string // ProviderLocal or ProviderKnative: the cluster kinds it deploys on map to it
	New  func(s Settings, repo *inventory.Repo) (Provider, error)
}

// LocalProvider is the factory of the local provider.
var LocalProvider = ProviderFactory{Name: ProviderLocal, New: func(s Settings, _ *inventory.Repo) (Provider, error) {
	return &Local{BinDir: s.BinDir, LogDir: s.LogDir, ReadyTimeout: s.DeployTimeout, TargetsDir: s.TargetsDir}, nil
}}

// Builder is the fn.Builder of a deployer with the given providers.
func Builder(factories ...ProviderFactory) fn.Builder {
	return func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		sealer, err := d.Config.Sealer()
		if err != nil {
			return nil, err
		}
		s, err := ReadSettings(d.Config)
		if err != nil {
			return nil, err
		}
		repo := &inventory.Repo{Store: d.Store, Sealer: sealer, Endpoints: d.Egress}
		providers := map[string]Provider{}
		for _, f := range factories {
			p, err := f.New(s, repo)
			if err != nil {
				return nil, fmt.Errorf("%s provider: %w", f.Name, err)
			}
			providers[f.Name] = p
		}
		return New(d, s, repo, providers).Function(), nil
	}
}

// Deployer runs deployments; New builds one (tests pass their own providers).
type Deployer struct {
	deps      fn.Deps
	settings  Settings
	inventory *inventory.Repo
	records   records
	providers map[string]Provider
	metrics   metrics

	mu   sync.Mutex
	base context.Context // Start's context: workers outlive the event that started them
	busy map[string]*worker
	wg   sync.WaitGroup
}

// worker is the in-process state of one deployment being worked on.
type worker struct {
	again  bool // another event arrived meanwhile: look at the record once more
	cancel context.CancelFunc
}

// New builds a deployer.
func New(d fn.Deps, s Settings, repo *inventory.Repo, providers map[string]Provider) *Deployer {
	return &Deployer{deps: d, settings: s, inventory: repo, records: records{d.Store}, providers: providers,
		metrics: newMetrics(d.Metrics.Registry), busy: map[string]*worker{}}
}

// Function is the deployer as the runtime runs it.
func (x *Deployer) Function() *fn.Function {
	return &fn.Function{
		Events: map[string]cloudevent.Handler{
			events.TypeDeploymentRequested:        x.onRequested,
			events.TypeDeploymentCleanupRequested: x.onCleanupRequested,
		},
		Start: x.Run,
		Close: func(context.Context) error { x.wg.Wait(); return nil },
	}
}

type metrics struct {
	deployments     *prometheus.CounterVec
	cleanups        *prometheus.CounterVec
	cleanupFailures prometheus.Counter
	active          *prometheus.GaugeVec
	reaped          prometheus.Counter
	evidence        *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry) metrics {
	m := metrics{
		deployments: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_deployer_deployments_total",
			Help: "Deployments this instance finished, by provider and outcome (ready, failed)."}, []string{"provider", "outcome"}),
		cleanups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_deployer_cleanups_total",
			Help: "Deployment cleanups this instance finished, by provider and outcome (cleaned, failed)."}, []string{"provider", "outcome"}),
		cleanupFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_deployer_cleanup_failures_total",
			Help: "Cleanups that failed and keep their record for a retry."}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lens_deployer_active_deployments",
			Help: "Deployment records on the store by status, as of the last sweep."}, []string{"status"}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{Name: "lens_deployer_takeovers_total",
			Help: "Deployments this instance took over from a worker whose lease expired."}),
		evidence: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_deployer_cluster_evidence_total",
			Help: "Cluster evidence gatherings of ready deployments, by occasion (deployment-ready, in-use-refresh) and status (available, partial, unavailable)."},
			[]string{"occasion", "status"}),
	}
	reg.MustRegister(m.deployments, m.cleanups, m.cleanupFailures, m.active, m.reaped, m.evidence)
	return m
}

func badEvent(format string, args ...any) error {
	return cloudevent.Permanent(problem.New(problem.CodeBadRequest, format, args...))
}

func (x *Deployer) onRequested(ctx context.Context, e cloudevent.Event) error {
	var p events.DeploymentRequested
	if err := e.DecodeData(&p); err != nil {
		return err
	}
	for field, v := range map[string]string{"execution_id": p.ExecutionID, "configuration_id": p.ConfigurationID, "cluster_session_id": p.ClusterSessionID} {
		if err := state.ValidateID(v); err != nil {
			return badEvent("%s: %v", field, err)
		}
	}
	if len(p.CaseRef) > 400 || len(p.Name) > 200 {
		return badEvent("case_ref is at most 400 characters and name at most 200")
	}
	d := Deployment{ExecutionID: p.ExecutionID, ConfigurationID: p.ConfigurationID, ClusterSessionID: p.ClusterSessionID,
		CaseRef: p.CaseRef, Name: p.Name, Status: StatusDeploying, CreatedAt: time.Now().UTC()}
	err := x.records.create(ctx, d)
	if errors.Is(err, state.ErrExists) {
		// A redelivery or a repeated request: answer from the record when it is settled.
		stored, _, err := x.records.get(ctx, p.ExecutionID)
		if err != nil {
			return err
		}
		if stored.ConfigurationID != p.ConfigurationID {
			return badEvent("execution %s is already a deployment of configuration %s", p.ExecutionID, stored.ConfigurationID)
		}
		switch stored.Status {
		case StatusReady:
			return x.emitReady(ctx, stored)
		case StatusFailed:
			return x.emitFailed(ctx, stored, "deploy", stored.Attempts)
		}
		return nil // in progress here or elsewhere; the sweep takes it over if its worker died
	}
	if err != nil {
		return err
	}
	x.kick(p.ExecutionID)
	return nil
}

func (x *Deployer) onCleanupRequested(ctx context.Context, e cloudevent.Event) error {
	var p events.DeploymentCleanupRequested
	if err := e.DecodeData(&p); err != nil {
		return err
	}
	if err := state.ValidateID(p.ExecutionID); err != nil {
		return badEvent("execution_id: %v", err)
	}
	_, err := x.records.update(ctx, p.ExecutionID, state.Fence{}, func(d *Deployment) error {
		if d.Status == StatusCleaning {
			return errUnchanged
		}
		d.Status, d.Error = StatusCleaning, ""
		return nil
	})
	if errors.Is(err, state.ErrNotFound) {
		// Nothing (left) to clean: cleaned already, or never deployed by us.
		return x.deps.Events.Send(ctx, events.TypeDeploymentCleaned, p.ExecutionID+"/cleaned", p.ExecutionID,
			events.DeploymentCleaned(p))
	}
	if err != nil {
		return err
	}
	x.mu.Lock()
	if w := x.busy[p.ExecutionID]; w != nil && w.cancel != nil {
		w.cancel() // a deployment still coming up is abandoned; its worker turns to the cleanup
	}
	x.mu.Unlock()
	x.kick(p.ExecutionID)
	return nil
}

// kick makes sure a worker looks at the deployment: a new one, or the running one once more.
func (x *Deployer) kick(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.base == nil || x.base.Err() != nil {
		return // not started or draining: the sweep of this or another instance takes it
	}
	if w := x.busy[id]; w != nil {
		w.again = true
		return
	}
	x.busy[id] = &worker{}
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		x.work(x.base, id)
	}()
}

// Run is the Start hook: it sweeps for deployments nobody works on, at once and every
// SweepInterval, and returns once the workers it started have stopped.
func (x *Deployer) Run(ctx context.Context) {
	x.mu.Lock()
	x.base = ctx
	x.mu.Unlock()
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		x.refreshEvidence(ctx)
	}()
	leasedrun.Periodic{Interval: x.settings.SweepInterval, Log: x.deps.Log, Msg: "deployment sweep failed",
		QuietErrors: []error{state.ErrUnavailable}}.Run(ctx, x.sweep)
	x.wg.Wait()
}

func (x *Deployer) sweep(ctx context.Context) error {
	counts, err := x.deps.Store.Counts(ctx, Kind)
	if err != nil {
		return err
	}
	for status, n := range counts {
		x.metrics.active.WithLabelValues(status).Set(float64(n))
	}
	page, err := x.deps.Store.List(ctx, state.Query{Kind: Kind, Status: []string{StatusDeploying, StatusCleaning}, Limit: 200})
	if err != nil {
		return err
	}
	for _, rec := range page.Records {
		if holder, err := x.deps.Store.LeaseHolder(ctx, leaseName(rec.ID)); err == nil && holder.Owner != x.deps.Config.InstanceID {
			continue // a live worker elsewhere
		}
		x.kick(rec.ID)
	}
	return nil
}

func leaseName(id string) string { return "deployment:" + id }

// work drives one deployment until its record is settled (ready, failed, cleanup-failed or
// gone), under the deployment's lease. The worker gives up its busy entry only under the lock
// and only when no event arrived since its last look: an event that came while it was
// finishing (up to the lease's release) set again, and the worker takes the lease once more and
// acts on it now rather than leaving it to the next sweep.
func (x *Deployer) work(ctx context.Context, id string) {
	for {
		held := x.workLeased(ctx, id)
		x.mu.Lock()
		if w := x.busy[id]; !held || !w.again || ctx.Err() != nil {
			delete(x.busy, id)
			x.mu.Unlock()
			return
		}
		x.mu.Unlock()
	}
}

// workLeased is work under one acquisition of the lease; it reports whether it got the lease
// (not: another instance works on the deployment, or the store is unreachable).
func (x *Deployer) workLeased(ctx context.Context, id string) bool {
	lease, err := x.deps.Store.AcquireLease(ctx, leaseName(id), x.deps.Config.InstanceID, x.settings.LeaseTTL)
	if err != nil {
		if !errors.Is(err, state.ErrLeaseHeld) && ctx.Err() == nil {
			x.deps.Log.Warnw("deployment lease", "deployment", id, "error", err)
		}
		return false
	}
	fence := lease.Fence() // every step checks and writes with it: a lease taken again is lost
	leaseCtx, done, held := leasedrun.Hold(ctx, x.deps.Store, lease, x.settings.LeaseTTL, leasedrun.SameToken)
	defer func() {
		held.StopRenewing() // the renewal is the lease's only writer until it has stopped
		if !errors.Is(context.Cause(leaseCtx), state.ErrLeaseLost) {
			_ = x.deps.Store.ReleaseLease(context.WithoutCancel(ctx), held.Lease())
		}
		done()
	}()
	for leaseCtx.Err() == nil {
		x.mu.Lock()
		w := x.busy[id]
		w.again = false
		stepCtx, cancel := context.WithCancel(leaseCtx)
		w.cancel = cancel
		x.mu.Unlock()
		d, _, err := x.records.get(stepCtx, id)
		switch {
		case errors.Is(err, state.ErrNotFound):
			cancel()
			return true
		case err != nil:
			x.deps.Log.Warnw("deployment read", "deployment", id, "error", err)
		case d.Status == StatusDeploying:
			x.deploy(stepCtx, fence, d)
		case d.Status == StatusCleaning:
			x.cleanup(stepCtx, fence, d)
		}
		cancel()
		x.mu.Lock()
		again := w.again
		x.mu.Unlock()
		if !again {
			return true
		}
	}
	return true
}

// holdsLease says whether this worker's lease (the one fence was issued with) is still the
// lease's holder. A worker checks it right before a destructive step: the local provider's
// cleanup stops every child carrying the deployment's id, so a worker whose lease expired and
// was taken over would otherwise stop the new owner's children on the same host. A store that
// cannot answer counts as not held; the step is then left to the next worker or sweep.
func (x *Deployer) holdsLease(ctx context.Context, fence state.Fence) bool {
	holder, err := x.deps.Store.LeaseHolder(ctx, fence.Lease)
	return err == nil && holder.Owner == x.deps.Config.InstanceID && holder.Token == fence.Token
}

// deploy brings d up. What an earlier worker started is removed first (it cannot be trusted
// half-done), then the provider starts afresh.
func (x *Deployer) deploy(ctx context.Context, fence state.Fence, d Deployment) {
	fail := func(err error) {
		if !x.holdsLease(context.WithoutCancel(ctx), fence) {
			// Taken over: what this worker started is the new owner's to reap, and its
			// record is no longer this worker's to write.
			x.deps.Log.Warnw("deployment failed after its lease was lost; left to the new owner", "deployment", d.ExecutionID, "error", err)
			return
		}
		x.metrics.deployments.WithLabelValues(orUnknown(d.Provider), "failed").Inc()
		if p := x.providers[d.Provider]; p != nil {
			if cerr := p.Cleanup(context.WithoutCancel(ctx), &d); cerr != nil {
				err = fmt.Errorf("%w (and stopping what was started failed: %v)", err, cerr)
			}
		}
		saved, uerr := x.records.update(context.WithoutCancel(ctx), d.ExecutionID, fence, func(s *Deployment) error {
			if s.Status != StatusDeploying {
				return errUnchanged // cleanup was requested meanwhile: it wins
			}
			*s = d
			s.Status, s.Error = StatusFailed, err.Error()
			return nil
		})
		if uerr == nil && saved.Status == StatusFailed {
			_ = x.emitFailed(context.WithoutCancel(ctx), saved, "deploy", saved.Attempts)
		}
	}
	// An earlier attempt (Attempts > 0) may have started children the record does not name: its
	// worker saves the record after each start and can die in between. The provider's cleanup
	// finds those too (the local one by the deployment id in their environment), so it runs on
	// every takeover, not only when the record lists something. Its provider is in the record
	// from before the first start.
	if d.Attempts > 0 || len(d.Processes) > 0 || len(d.Objects) > 0 {
		x.metrics.reaped.Inc()
		x.deps.Log.Infow("taking over a deployment whose worker died", "deployment", d.ExecutionID,
			"attempts", d.Attempts, "processes", len(d.Processes), "objects", len(d.Objects))
		if p := x.providers[d.Provider]; p != nil {
			if !x.holdsLease(ctx, fence) {
				return // taken over meanwhile
			}
			if err := p.Cleanup(ctx, &d); err != nil {
				x.deps.Log.Warnw("reaping the dead worker's deployment", "deployment", d.ExecutionID, "error", err)
				return // the next sweep retries
			}
		}
		d.Processes, d.Objects = nil, nil
	}
	d.Attempts++
	if _, err := x.records.update(ctx, d.ExecutionID, fence, func(s *Deployment) error {
		if s.Status != StatusDeploying {
			return errors.New("no longer deploying")
		}
		s.Attempts, s.Processes, s.Objects = d.Attempts, nil, nil
		return nil
	}); err != nil {
		return
	}
	cfgRec, err := x.inventory.Configuration(ctx, d.ConfigurationID)
	if err != nil {
		fail(fmt.Errorf("configuration %s: %w", d.ConfigurationID, err))
		return
	}
	cfg, err := deployconfig.Parse(cfgRec.ProviderRef, cfgRec.Content)
	if err != nil {
		fail(fmt.Errorf("configuration %s cannot be deployed: %s", d.ConfigurationID, problemText(err)))
		return
	}
	session, err := x.inventory.ActiveSession(ctx, d.ClusterSessionID)
	if err != nil {
		fail(fmt.Errorf("cluster session %s: %s", d.ClusterSessionID, problemText(err)))
		return
	}
	d.ProviderRef, d.Model, d.Namespace = cfg.ProviderRef, cfg.Content.Model.Name, session.Namespace
	if d.Name == "" {
		d.Name = cfgRec.Name
	}
	switch session.ClusterKind {
	case inventory.ClusterLocal:
		d.Provider = ProviderLocal
	case inventory.ClusterKubernetes:
		d.Provider = ProviderKnative
	}
	provider := x.providers[d.Provider]
	if provider == nil {
		fail(x.missingProvider(d.Provider, session.ClusterKind))
		return
	}
	save := func(ctx context.Context) error {
		_, err := x.records.update(context.WithoutCancel(ctx), d.ExecutionID, fence, func(s *Deployment) error {
			status := s.Status
			*s = d
			s.Status = status // a cleanup request keeps its status
			return nil
		})
		return err
	}
	if err := save(ctx); err != nil {
		return
	}
	if err := provider.Deploy(ctx, &d, cfg, save); err != nil {
		if ctx.Err() != nil {
			// Cancelled: cleanup was requested (its worker step removes what was started), or
			// this instance is draining (the sweep of the next one reaps it).
			_ = save(context.WithoutCancel(ctx))
			return
		}
		fail(err)
		return
	}
	exec := inventory.Execution{ID: d.ExecutionID, ClusterSessionID: d.ClusterSessionID, Name: d.Name, Model: d.Model,
		Endpoint: d.Endpoint, Namespace: d.Namespace, Ownership: inventory.OwnershipEvaluation, Status: inventory.StatusReady,
		Models: []string{d.Model}, ConfigurationID: d.ConfigurationID, ProviderRef: d.ProviderRef, BaselineURL: d.BaselineURL,
		ReplicaEndpoints: d.ReplicaEndpoints}
	if g, ok := provider.(EvidenceGatherer); ok {
		ev := x.gather(ctx, g, &d, inventory.EvidenceAtReady)
		exec.ClusterEvidence = &ev
	}
	if err := x.inventory.PutExecution(ctx, exec, ""); err != nil {
		fail(fmt.Errorf("record the execution: %w", err))
		return
	}
	saved, err := x.records.update(ctx, d.ExecutionID, fence, func(s *Deployment) error {
		if s.Status != StatusDeploying {
			return errUnchanged
		}
		*s = d
		s.Status, s.Error = StatusReady, ""
		return nil
	})
	if err != nil || saved.Status != StatusReady {
		return // cleanup was requested meanwhile; the worker turns to it
	}
	x.metrics.deployments.WithLabelValues(d.Provider, "ready").Inc()
	if err := x.emitReady(ctx, saved); err != nil {
		x.deps.Log.Warnw("deployment.ready not sent", "deployment", d.ExecutionID, "error", err)
	}
}

// gather runs a provider's evidence gathering and says when something was unavailable.
func (x *Deployer) gather(ctx context.Context, g EvidenceGatherer, d *Deployment, occasion string) inventory.ClusterEvidence {
	ev := g.Evidence(ctx, d, occasion)
	x.metrics.evidence.WithLabelValues(occasion, ev.Status).Inc()
	if ev.Status != inventory.EvidenceAvailable {
		x.deps.Log.Infow("cluster evidence incomplete", "deployment", d.ExecutionID, "occasion", occasion, "status", ev.Status, "reason", ev.Reason)
	}
	return ev
}

// refreshEvidence refreshes, every EvidenceInterval until ctx ends, the cluster evidence of
// every ready deployment whose execution a run uses, so a run's diagnostics show the serving
// pods as they were during the run (restarts, evictions, warnings), not only at readiness. An
// execution whose evidence another instance refreshed within the interval is left alone.
func (x *Deployer) refreshEvidence(ctx context.Context) {
	interval := x.settings.EvidenceInterval
	if interval <= 0 {
		interval = DefaultEvidenceInterval
	}
	leasedrun.Periodic{Interval: interval, Delayed: true, Log: x.deps.Log, Msg: "cluster evidence refresh failed",
		QuietErrors: []error{state.ErrUnavailable}}.Run(ctx, func(ctx context.Context) error { return x.refreshOnce(ctx, interval) })
}

func (x *Deployer) refreshOnce(ctx context.Context, interval time.Duration) error {
	page, err := x.deps.Store.List(ctx, state.Query{Kind: Kind, Status: []string{StatusReady}, Limit: 200})
	if err != nil {
		return err
	}
	for _, rec := range page.Records {
		if ctx.Err() != nil {
			return nil
		}
		d, _, err := x.records.get(ctx, rec.ID)
		if err != nil {
			continue
		}
		g, ok := x.providers[d.Provider].(EvidenceGatherer)
		if !ok || d.Status != StatusReady {
			continue
		}
		exec, err := x.inventory.Execution(ctx, d.ExecutionID)
		if err != nil || exec.ActiveUses == 0 ||
			(exec.ClusterEvidence != nil && time.Since(exec.ClusterEvidence.CollectedAt) < interval*9/10) {
			continue
		}
		ev := x.gather(ctx, g, &d, inventory.EvidenceInUse)
		if err := x.inventory.SetExecutionClusterEvidence(ctx, d.ExecutionID, ev); err != nil && problem.CodeOf(err) != problem.CodeNotFound {
			return err
		}
	}
	return nil
}

// cleanup removes the execution record first (refused while a run uses it, which keeps the
// deployment up for that run), then what the provider created, then the deployment record.
func (x *Deployer) cleanup(ctx context.Context, fence state.Fence, d Deployment) {
	d.CleanupAttempts++
	err := x.inventory.DeleteExecution(ctx, d.ExecutionID)
	if problem.CodeOf(err) == problem.CodeNotFound {
		err = nil
	}
	if err == nil {
		if p := x.providers[d.Provider]; p != nil {
			if !x.holdsLease(ctx, fence) {
				return // taken over: the new owner cleans up
			}
			err = p.Cleanup(ctx, &d)
		}
	}
	if err == nil {
		if err = x.records.delete(ctx, d.ExecutionID); err == nil {
			x.metrics.cleanups.WithLabelValues(orUnknown(d.Provider), "cleaned").Inc()
			if err := x.deps.Events.Send(ctx, events.TypeDeploymentCleaned, d.ExecutionID+"/cleaned", d.ExecutionID,
				events.DeploymentCleaned{ExecutionID: d.ExecutionID, CaseRef: d.CaseRef}); err != nil {
				x.deps.Log.Warnw("deployment.cleaned not sent", "deployment", d.ExecutionID, "error", err)
			}
			return
		}
	}
	if ctx.Err() != nil {
		return // the lease was lost or the instance drains: the next worker retries
	}
	x.metrics.cleanups.WithLabelValues(orUnknown(d.Provider), "failed").Inc()
	x.metrics.cleanupFailures.Inc()
	saved, uerr := x.records.update(ctx, d.ExecutionID, fence, func(s *Deployment) error {
		s.Processes, s.Objects = d.Processes, d.Objects // what is still running
		s.Status, s.Error, s.CleanupAttempts = StatusCleanupFailed, problemText(err), d.CleanupAttempts
		return nil
	})
	if uerr == nil {
		_ = x.emitFailed(ctx, saved, "cleanup", saved.CleanupAttempts)
	}
}

func (x *Deployer) emitReady(ctx context.Context, d Deployment) error {
	return x.deps.Events.Send(ctx, events.TypeDeploymentReady, d.ExecutionID+"/ready/"+strconv.Itoa(d.Attempts), d.ExecutionID,
		events.DeploymentReady{ExecutionID: d.ExecutionID, ConfigurationID: d.ConfigurationID, CaseRef: d.CaseRef, Provider: d.Provider,
			ProviderRef: d.ProviderRef, Endpoint: d.Endpoint, BaselineURL: d.BaselineURL, ReplicaEndpoints: d.ReplicaEndpoints, Model: d.Model})
}

func (x *Deployer) emitFailed(ctx context.Context, d Deployment, operation string, attempt int) error {
	return x.deps.Events.Send(ctx, events.TypeDeploymentFailed, d.ExecutionID+"/"+operation+"-failed/"+strconv.Itoa(attempt), d.ExecutionID,
		events.DeploymentFailed{ExecutionID: d.ExecutionID, ConfigurationID: d.ConfigurationID, CaseRef: d.CaseRef, Operation: operation, Error: d.Error})
}

// missingProvider says why a deployment on a cluster kind no provider of this build serves
// fails: which provider it needs, which this build has, and which build has it.
func (x *Deployer) missingProvider(name, clusterKind string) error {
	if name == "" {
		return fmt.Errorf("no provider deploys on a %q cluster", clusterKind)
	}
	linked := slices.Sorted(maps.Keys(x.providers))
	return fmt.Errorf("a %q cluster needs the %s provider, which this deployer build does not have (it has: %s): "+
		"the local stack's deployer (functions/deployer/cmd/deployer-local) has the local provider only; "+
		"deploy on a Kubernetes cluster with the deployer of the Knative image (functions/deployer/cmd/deployer), which has both",
		clusterKind, name, strings.Join(linked, ", "))
}

// problemText is an error's client-facing text: a problem's detail with its field errors.
func problemText(err error) string {
	var pe *problem.Error
	if errors.As(err, &pe) {
		if fields, ok := pe.Detail.([]problem.FieldError); ok {
			s := ""
			for i, f := range fields {
				if i > 0 {
					s += "; "
				}
				s += fmt.Sprintf("%v: %s", f.Location, f.Message)
			}
			return s
		}
		return fmt.Sprint(pe.Detail)
	}
	return err.Error()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
