package state_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// memLeases is a Leases in memory whose holder a test can expire or hand to another owner.
type memLeases struct {
	mu       sync.Mutex
	holder   map[string]state.Lease
	token    int64
	failNext error // the next RenewLease fails with it (a store outage)
	renewals int
	acquires int
}

func newMemLeases() *memLeases { return &memLeases{holder: map[string]state.Lease{}} }

func (m *memLeases) AcquireLease(_ context.Context, name, owner string, ttl time.Duration) (state.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acquires++
	h, ok := m.holder[name]
	if ok && h.Owner != owner {
		return state.Lease{}, state.ErrLeaseHeld
	}
	if !ok {
		m.token++
		h = state.Lease{Name: name, Owner: owner, Token: m.token}
	}
	h.ExpiresAt = time.Now().Add(ttl)
	m.holder[name] = h
	return h, nil
}

func (m *memLeases) RenewLease(_ context.Context, l state.Lease, ttl time.Duration) (state.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.renewals++
	if err := m.failNext; err != nil {
		m.failNext = nil
		return state.Lease{}, err
	}
	h, ok := m.holder[l.Name]
	if !ok || h.Owner != l.Owner || h.Token != l.Token {
		return state.Lease{}, state.ErrLeaseLost
	}
	h.ExpiresAt = time.Now().Add(ttl)
	m.holder[l.Name] = h
	return h, nil
}

func (m *memLeases) ReleaseLease(context.Context, state.Lease) error { return nil }

func (m *memLeases) LeaseHolder(_ context.Context, name string) (state.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.holder[name]
	if !ok {
		return state.Lease{}, state.ErrNotFound
	}
	return h, nil
}

func (m *memLeases) do(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

func (m *memLeases) counts() (renewals, acquires int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renewals, m.acquires
}

const heldTTL = 30 * time.Millisecond // renewed every 10 ms

// keeping starts keep on a lease of "a" just acquired and returns the held lease, a channel
// closed when keep returns, whether lost was called, and its cancel.
func keeping(t *testing.T, m *memLeases, keep keepFunc) (*state.HeldLease, chan struct{}, *atomic.Bool, context.CancelFunc) {
	t.Helper()
	l, err := m.AcquireLease(context.Background(), "job:1", "a", heldTTL)
	if err != nil {
		t.Fatal(err)
	}
	h := state.NewHeldLease(l)
	ctx, cancel := context.WithCancel(context.Background())
	var lost atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		keep(h, ctx, m, heldTTL, func() { lost.Store(true) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return h, done, &lost, cancel
}

// keepFunc is Keep or KeepToken.
type keepFunc = func(h *state.HeldLease, ctx context.Context, leases state.Leases, ttl time.Duration, lost func())

var keeps = map[string]keepFunc{"Keep": (*state.HeldLease).Keep, "KeepToken": (*state.HeldLease).KeepToken}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func returned(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Both renew the lease while it is theirs, survive a failed renewal and stop when ctx ends.
func TestKeepAndKeepTokenRenewUntilCancelled(t *testing.T) {
	for name, keep := range keeps {
		t.Run(name, func(t *testing.T) {
			m := newMemLeases()
			h, done, lost, cancel := keeping(t, m, keep)
			first := h.Lease()
			m.do(func() { m.failNext = errors.New("store unreachable") })
			eventually(t, "two renewals after the failed one", func() bool { r, _ := m.counts(); return r >= 3 })
			eventually(t, "the renewed expiry", func() bool { return h.Lease().ExpiresAt.After(first.ExpiresAt) })
			if h.Fence() != first.Fence() {
				t.Fatalf("fence %+v after renewals, want %+v", h.Fence(), first.Fence())
			}
			cancel()
			eventually(t, "keep to return on cancel", func() bool { return returned(done) })
			if lost.Load() {
				t.Fatal("lost called though the lease was never lost")
			}
			r, _ := m.counts()
			time.Sleep(4 * heldTTL / 3)
			if r2, _ := m.counts(); r2 != r {
				t.Fatalf("%d renewals after keep returned", r2-r)
			}
		})
	}
}

// Keep takes an expired lease nobody took again, with a new token; KeepToken counts it lost.
func TestAnExpiredLease(t *testing.T) {
	t.Run("Keep takes it again", func(t *testing.T) {
		m := newMemLeases()
		h, done, lost, _ := keeping(t, m, keeps["Keep"])
		before := h.Fence()
		m.do(func() { delete(m.holder, "job:1") })
		eventually(t, "a new token", func() bool { return h.Fence().Token != before.Token })
		if returned(done) || lost.Load() {
			t.Fatal("Keep gave up a lease it could take again")
		}
		holder, err := m.LeaseHolder(context.Background(), "job:1")
		if err != nil || holder.Token != h.Fence().Token {
			t.Fatalf("holder %+v (%v), held %+v", holder, err, h.Fence())
		}
	})
	t.Run("KeepToken loses it", func(t *testing.T) {
		m := newMemLeases()
		h, done, lost, _ := keeping(t, m, keeps["KeepToken"])
		before := h.Fence()
		_, acquiresBefore := m.counts()
		m.do(func() { delete(m.holder, "job:1") })
		eventually(t, "KeepToken to return", func() bool { return returned(done) })
		if !lost.Load() {
			t.Fatal("KeepToken returned without calling lost")
		}
		if _, acquires := m.counts(); acquires != acquiresBefore {
			t.Fatal("KeepToken took the lease again")
		}
		if h.Fence() != before {
			t.Fatalf("fence %+v, want the first one %+v", h.Fence(), before)
		}
	})
}

// Both call lost and return when another owner took the lease.
func TestALeaseTakenByAnotherOwner(t *testing.T) {
	for name, keep := range keeps {
		t.Run(name, func(t *testing.T) {
			m := newMemLeases()
			_, done, lost, _ := keeping(t, m, keep)
			m.do(func() { m.token++; m.holder["job:1"] = state.Lease{Name: "job:1", Owner: "b", Token: m.token} })
			eventually(t, "keep to return", func() bool { return returned(done) })
			if !lost.Load() {
				t.Fatal("returned without calling lost")
			}
		})
	}
}
