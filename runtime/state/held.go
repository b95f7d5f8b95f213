package state

import (
	"context"
	"errors"
	"sync"
	"time"
)

// HeldLease is a lease a worker holds while it works: safe to read while Keep renews it, so
// fenced writes always carry the current token.
type HeldLease struct {
	mu    sync.Mutex
	lease Lease
}

// NewHeldLease wraps a lease just acquired.
func NewHeldLease(l Lease) *HeldLease { return &HeldLease{lease: l} }

// Lease is the current lease (the zero Lease for a nil HeldLease: work done without one).
func (h *HeldLease) Lease() Lease {
	if h == nil {
		return Lease{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// Fence is the fencing value the worker's writes carry.
func (h *HeldLease) Fence() Fence { return h.Lease().Fence() }

// Keep renews the lease every third of ttl until ctx ends. A lease that expired only because
// the store was unreachable for longer than ttl is taken again (with a new token) when nobody
// else took it meanwhile; when another owner holds it, Keep calls lost and returns. A renewal
// that fails otherwise is tried again at the next tick. Work under it reads its fence from h
// at every write, so it follows the new token.
func (h *HeldLease) Keep(ctx context.Context, leases Leases, ttl time.Duration, lost func()) {
	h.keep(ctx, leases, ttl, lost, true)
}

// KeepToken renews the lease like Keep but never takes it again: a renewal that finds the
// lease expired or held by another owner calls lost and returns. It is for work that took its
// fence once, when it started (the deployer's steps check and write with that token), and
// cannot follow a new one. A renewal that fails otherwise is tried again at the next tick.
func (h *HeldLease) KeepToken(ctx context.Context, leases Leases, ttl time.Duration, lost func()) {
	h.keep(ctx, leases, ttl, lost, false)
}

func (h *HeldLease) keep(ctx context.Context, leases Leases, ttl time.Duration, lost func(), retake bool) {
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			current := h.Lease()
			l, err := leases.RenewLease(ctx, current, ttl)
			if !retake && (errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrLeaseHeld)) {
				lost()
				return
			}
			if errors.Is(err, ErrLeaseLost) {
				l, err = leases.AcquireLease(ctx, current.Name, current.Owner, ttl)
				if errors.Is(err, ErrLeaseHeld) {
					lost()
					return
				}
			}
			if err == nil {
				h.mu.Lock()
				h.lease = l
				h.mu.Unlock()
			}
		}
	}
}
