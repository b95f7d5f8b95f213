package leasedrun

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// ErrSkip is returned by a Claim when the record is not (or no longer) for this runner: the pool
// releases the lease and reports the job as not started, without error.
var ErrSkip = errors.New("leasedrun: not claimable")

// Logger is what the pool logs its sweep failures to (fn.Logger fits).
type Logger interface {
	Warnw(msg string, keysAndValues ...any)
}

// Job is the work of one claimed record. ctx is cancelled by Close, and with the cause
// state.ErrLeaseLost when another owner took the lease. The lease is renewed until the job
// calls Held.StopRenewing (before it releases the lease or hands the record on) or returns.
type Job func(ctx context.Context, held *Held)

// Config wires a pool to its records.
type Config struct {
	Leases        state.Leases
	Owner         string        // the lease owner: the instance id
	LeaseTTL      time.Duration // renewed every third of it
	MaxConcurrent int           // slots on this instance (at least 1)
	SweepInterval time.Duration
	// LeaseName is the lease of a record id.
	LeaseName func(id string) string
	// Claim moves the record to running under lease and returns its job. A record that is not
	// claimable any more (ErrSkip, state.ErrInvalidTransition, state.ErrNotFound) is skipped.
	Claim func(ctx context.Context, id string, lease state.Lease) (Job, error)
	// Queued lists the ids waiting for a runner, oldest first (nil: no queue sweep).
	Queued func(ctx context.Context) ([]string, error)
	// Reap ends the work whose runner was lost (nil: none); Pool.Running tells the ids this
	// instance runs itself.
	Reap func(ctx context.Context) error
	Log  Logger
	// QuietErrors are sweep errors not logged (a store outage is logged once by the runtime).
	QuietErrors []error
}

// Pool runs claimed jobs in the background, at most MaxConcurrent at a time.
type Pool struct {
	cfg   Config
	slots chan struct{}
	// freed wakes the sweep when a job gives its slot back, so the next queued record starts
	// at once instead of on the next tick.
	freed   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]context.CancelFunc // nil value: a start in progress
	closed  bool                          // Close began: no new job starts
}

// New returns a pool; its Sweep runs in the function's Start hook.
func New(cfg Config) *Pool {
	return &Pool{cfg: cfg, slots: make(chan struct{}, max(cfg.MaxConcurrent, 1)), freed: make(chan struct{}, 1),
		running: map[string]context.CancelFunc{}}
}

// Running reports whether this instance runs (or is starting) the job of id.
func (p *Pool) Running(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.running[id]
	return ok
}

// Full reports whether every slot is busy.
func (p *Pool) Full() bool { return len(p.slots) == cap(p.slots) }

// TryStart claims the record and starts its job in the background. It reports false, without
// error, when the record is not claimable, another runner holds it, or every slot is busy (the
// sweep of some instance takes it later).
func (p *Pool) TryStart(ctx context.Context, id string) (bool, error) {
	select {
	case p.slots <- struct{}{}:
	default:
		return false, nil
	}
	// The event and the sweep can offer the same record at once. The lease cannot tell them
	// apart (same owner), so the instance reserves the id first: a second attempt would
	// otherwise release the lease the first one runs under.
	p.mu.Lock()
	_, busy := p.running[id]
	busy = busy || p.closed
	if !busy {
		p.running[id] = nil
	}
	p.mu.Unlock()
	if busy {
		<-p.slots
		return false, nil
	}
	started := false
	defer func() {
		if !started {
			p.mu.Lock()
			delete(p.running, id)
			p.mu.Unlock()
			<-p.slots
		}
	}()
	lease, err := p.cfg.Leases.AcquireLease(ctx, p.cfg.LeaseName(id), p.cfg.Owner, p.cfg.LeaseTTL)
	if errors.Is(err, state.ErrLeaseHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	job, err := p.cfg.Claim(ctx, id, lease)
	if err != nil {
		_ = p.cfg.Leases.ReleaseLease(context.WithoutCancel(ctx), lease)
		if errors.Is(err, ErrSkip) || errors.Is(err, state.ErrInvalidTransition) || errors.Is(err, state.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.running[id] = cancel
	if p.closed {
		cancel() // Close began while this start was in progress: the job records its end at once
	}
	p.mu.Unlock()
	started = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.freeSlot()
		defer cancel()
		defer func() {
			p.mu.Lock()
			delete(p.running, id)
			p.mu.Unlock()
		}()
		p.run(runCtx, lease, job)
	}()
	return true, nil
}

// run renews the lease while the job works.
func (p *Pool) run(ctx context.Context, lease state.Lease, job Job) {
	ctx, cancel, h := Hold(ctx, p.cfg.Leases, lease, p.cfg.LeaseTTL, Retake)
	defer cancel() // stops the renewal first, if the job did not
	job(ctx, h)
}

// freeSlot gives a finished job's slot back and wakes the sweep to fill it.
func (p *Pool) freeSlot() {
	<-p.slots
	select {
	case p.freed <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Sweep runs until ctx ends (the function's Start hook): at once and then every interval it
// starts queued records this instance has room for and reaps lost runners; whenever a slot
// frees it starts the next queued record without waiting for the tick.
func (p *Pool) Sweep(ctx context.Context) {
	tick := time.NewTicker(p.cfg.SweepInterval)
	defer tick.Stop()
	for reap := true; ; {
		if err := p.sweepQueue(ctx); err != nil {
			p.warn(ctx, "queue sweep failed", err)
		}
		if reap && p.cfg.Reap != nil {
			if err := p.cfg.Reap(ctx); err != nil {
				p.warn(ctx, "lost-runner check failed", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			reap = true
		case <-p.freed:
			reap = false
		}
	}
}

func (p *Pool) warn(ctx context.Context, msg string, err error) {
	logFailure(ctx, p.cfg.Log, p.cfg.QuietErrors, msg, err)
}

func (p *Pool) sweepQueue(ctx context.Context) error {
	if p.cfg.Queued == nil {
		return nil
	}
	ids, err := p.cfg.Queued(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		started, err := p.TryStart(ctx, id)
		if err != nil {
			return err
		}
		if !started && p.Full() {
			return nil
		}
	}
	return nil
}

// Close stops new starts, cancels the jobs in flight and waits for them to record their end.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	for _, cancel := range p.running {
		if cancel != nil { // nil: a start in progress, which finds the pool closed
			cancel()
		}
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
