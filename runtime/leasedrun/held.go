package leasedrun

import (
	"context"
	"sync"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// Renewal is how Hold renews a lease that expired while the store was unreachable.
type Renewal int

const (
	// Retake takes it again with a new token when nobody else took it (state.HeldLease.Keep):
	// for work that reads its fence from Held at every write, as the pool's jobs do.
	Retake Renewal = iota
	// SameToken counts it lost (state.HeldLease.KeepToken): for work that took its fence once,
	// when it started, as the deployer's steps do.
	SameToken
)

// Held is a lease renewed while the work it guards runs.
type Held struct {
	*state.HeldLease
	once sync.Once
	stop func()
}

// StopRenewing stops the renewal and waits for it, so no renewal races the job's release or
// hand-off of the lease; safe to call more than once.
func (h *Held) StopRenewing() { h.once.Do(h.stop) }

// Hold renews lease every third of ttl in the background while the work it guards runs under
// the returned context. That context ends with ctx, when cancel is called, or when another
// owner took the lease, with the cause state.ErrLeaseLost (context.Cause tells it). The caller
// calls StopRenewing before it releases or hands on the lease, and cancel (which stops the
// renewal too) when the work is done.
func Hold(ctx context.Context, leases state.Leases, lease state.Lease, ttl time.Duration, r Renewal) (context.Context, context.CancelFunc, *Held) {
	ctx, cancel := context.WithCancelCause(ctx)
	renewCtx, stopRenewing := context.WithCancel(ctx)
	kept := make(chan struct{})
	h := &Held{HeldLease: state.NewHeldLease(lease)}
	keep := h.Keep
	if r == SameToken {
		keep = h.KeepToken
	}
	go func() {
		defer close(kept)
		keep(renewCtx, leases, ttl, func() { cancel(state.ErrLeaseLost) })
	}()
	h.stop = func() {
		stopRenewing()
		<-kept
	}
	return ctx, func() { h.StopRenewing(); cancel(nil) }, h
}
