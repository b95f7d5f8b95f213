package inventoryapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// probeLease is held by the one instance that sweeps the members, so replicas do not multiply
// the probe traffic.
const probeLease = "inventory:member-probes"

// probeConcurrency bounds the probes in flight during a sweep.
const probeConcurrency = 8

// Prober health-probes every Model Service's members on an interval and records the outcome,
// which re-elects each group's active member.
type Prober struct {
	Repo     *inventory.Repo
	Store    state.Store
	Client   *http.Client
	Owner    string // this instance, the lease owner
	Interval time.Duration
	Timeout  time.Duration
	Probes   *prometheus.CounterVec // by outcome
	Sweeps   prometheus.Counter
	Log      func(msg string, kv ...any)

	mu   sync.Mutex
	held *state.Lease // the probe lease while this instance holds it
}

// Run sweeps every Interval until ctx is cancelled, whenever this instance holds the lease.
func (p *Prober) Run(ctx context.Context) {
	ticker := time.NewTicker(p.Interval)
	defer ticker.Stop()
	defer p.release()
	for {
		if err := p.SweepIfLeader(ctx); err != nil && ctx.Err() == nil {
			p.Log("member health sweep failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// SweepIfLeader sweeps when this instance holds (or can take) the probe lease; the lease
// outlives a few intervals so a dead sweeper is replaced quickly.
func (p *Prober) SweepIfLeader(ctx context.Context) error {
	lease, err := p.Store.AcquireLease(ctx, probeLease, p.Owner, 3*p.Interval)
	if errors.Is(err, state.ErrLeaseHeld) {
		return nil
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.held = &lease
	p.mu.Unlock()
	p.Sweeps.Inc()
	return p.Sweep(ctx)
}

// release gives the probe lease up when this instance stops, so another one takes the sweeps
// over at its next tick instead of after the lease expired.
func (p *Prober) release() {
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	if held == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.Store.ReleaseLease(ctx, *held); err != nil && !errors.Is(err, state.ErrLeaseLost) {
		p.Log("could not release the member probe lease", "error", err)
	}
}

// Sweep probes the members of every Model Service once.
func (p *Prober) Sweep(ctx context.Context) error {
	for offset := 0; ; offset += state.MaxLimit {
		groups, total, err := p.Repo.ListModelServices(ctx, inventory.ModelServiceQuery{Page: inventory.Page{Offset: offset, Limit: state.MaxLimit}})
		if err != nil {
			return err
		}
		for _, g := range groups {
			if _, err := p.ProbeGroup(ctx, g); err != nil && problem.CodeOf(err) != problem.CodeNotFound {
				return err
			}
		}
		if len(groups) == 0 || offset+len(groups) >= total {
			return nil
		}
	}
}

// ProbeGroup probes every member of g concurrently and records the outcomes.
func (p *Prober) ProbeGroup(ctx context.Context, g inventory.ModelService) (inventory.ModelService, error) {
	probes := make([]inventory.Probe, len(g.Members))
	sem := make(chan struct{}, probeConcurrency)
	var wg sync.WaitGroup
	for i, m := range g.Members {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			probes[i] = p.probeMember(ctx, m.ExecutionID, g.PublishedName)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return g, err
	}
	return p.Repo.RecordProbes(ctx, g.ID, probes)
}

// probeMember checks the member's execution still exists, is ready and serves the published
// name, which is what requests to the group carry.
func (p *Prober) probeMember(ctx context.Context, executionID, publishedName string) (probe inventory.Probe) {
	probe.ExecutionID = executionID
	// A named result: the deferred stamp must reach the probe returned (it never did, and every
	// member showed last_probe_at 0001-01-01).
	defer func() {
		probe.At = time.Now()
		outcome := "unhealthy"
		if probe.Healthy {
			outcome = "healthy"
		}
		p.Probes.WithLabelValues(outcome).Inc()
	}()
	e, err := p.Repo.Execution(ctx, executionID)
	if err != nil {
		probe.Error = "the execution could not be read"
		if problem.CodeOf(err) == problem.CodeNotFound {
			probe.Error = "the execution no longer exists"
		}
		return probe
	}
	if e.Status != inventory.StatusReady {
		probe.Error = "the execution is " + e.Status
		return probe
	}
	key, err := p.Repo.ExecutionAPIKey(ctx, executionID)
	if err != nil {
		probe.Error = "the execution's API key could not be opened"
		return probe
	}
	if _, err := inventory.ProbeModel(ctx, p.Client, e.Endpoint, key, publishedName, p.Timeout); err != nil {
		probe.Error = err.Error() // a ProbeError: no secret in it
		return probe
	}
	probe.Healthy = true
	return probe
}
