package leasedrun_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore/redistest"
)

func leaseName(id string) string { return "job:" + id }

// A record offered many times at once runs once; a slot-less or held record is left alone.
func TestAJobOfferedConcurrentlyRunsOnce(t *testing.T) {
	store := redistest.Open(t)
	var claims, runs atomic.Int32
	release := make(chan struct{})
	p := leasedrun.New(leasedrun.Config{Leases: store, Owner: "a", LeaseTTL: 3 * time.Second, MaxConcurrent: 2, SweepInterval: time.Hour,
		LeaseName: leaseName, Claim: func(ctx context.Context, id string, l state.Lease) (leasedrun.Job, error) {
			claims.Add(1)
			return func(ctx context.Context, h *leasedrun.Held) { runs.Add(1); <-release }, nil
		}})
	var wg sync.WaitGroup
	var started atomic.Int32
	for range 8 {
		wg.Go(func() {
			ok, err := p.TryStart(context.Background(), "x")
			if err != nil {
				t.Error(err)
			}
			if ok {
				started.Add(1)
			}
		})
	}
	wg.Wait()
	if started.Load() != 1 || claims.Load() != 1 {
		t.Fatalf("started %d, claimed %d times; want once", started.Load(), claims.Load())
	}
	if !p.Running("x") {
		t.Fatal("Running(x) = false while its job runs")
	}
	// Another owner cannot take the lease while the job runs.
	other := leasedrun.New(leasedrun.Config{Leases: store, Owner: "b", LeaseTTL: 3 * time.Second, MaxConcurrent: 1, SweepInterval: time.Hour,
		LeaseName: leaseName, Claim: func(context.Context, string, state.Lease) (leasedrun.Job, error) {
			t.Error("b claimed a job a holds")
			return nil, errors.New("no")
		}})
	if ok, err := other.TryStart(context.Background(), "x"); ok || err != nil {
		t.Fatalf("b: started %v, err %v", ok, err)
	}
	close(release)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
}

// A skipped claim releases the lease and reports not started; a claim error is returned.
func TestSkippedClaimReleasesTheLease(t *testing.T) {
	store := redistest.Open(t)
	boom := errors.New("boom")
	p := leasedrun.New(leasedrun.Config{Leases: store, Owner: "a", LeaseTTL: 3 * time.Second, MaxConcurrent: 1, SweepInterval: time.Hour,
		LeaseName: leaseName, Claim: func(_ context.Context, id string, _ state.Lease) (leasedrun.Job, error) {
			if id == "gone" {
				return nil, state.ErrInvalidTransition
			}
			return nil, boom
		}})
	if ok, err := p.TryStart(context.Background(), "gone"); ok || err != nil {
		t.Fatalf("started %v, err %v", ok, err)
	}
	if _, err := store.LeaseHolder(context.Background(), leaseName("gone")); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("lease still held after a skipped claim: %v", err)
	}
	if _, err := p.TryStart(context.Background(), "bad"); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if p.Full() {
		t.Fatal("a failed start kept its slot")
	}
}

// The lease is renewed past its TTL while the job runs; a lease taken by another owner
// cancels the job with state.ErrLeaseLost.
func TestLeaseRenewedAndLossCancelsTheJob(t *testing.T) {
	store := redistest.Open(t)
	ttl := 600 * time.Millisecond
	cause := make(chan error, 1)
	renewed := make(chan struct{})
	p := leasedrun.New(leasedrun.Config{Leases: store, Owner: "a", LeaseTTL: ttl, MaxConcurrent: 1, SweepInterval: time.Hour,
		LeaseName: leaseName, Claim: func(context.Context, string, state.Lease) (leasedrun.Job, error) {
			return func(ctx context.Context, h *leasedrun.Held) {
				first := h.Lease().ExpiresAt
				for h.Lease().ExpiresAt.Equal(first) {
					time.Sleep(20 * time.Millisecond)
				}
				close(renewed)
				<-ctx.Done()
				cause <- context.Cause(ctx)
			}, nil
		}})
	if ok, err := p.TryStart(context.Background(), "x"); !ok || err != nil {
		t.Fatalf("started %v, err %v", ok, err)
	}
	<-renewed
	// Steal the lease: release a's and take it as b.
	held, err := store.LeaseHolder(context.Background(), leaseName("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.ReleaseLease(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AcquireLease(context.Background(), leaseName("x"), "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, state.ErrLeaseLost) {
			t.Fatalf("cause = %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not cancelled after its lease was taken")
	}
	_ = p.Close(context.Background())
}

// The sweep starts queued ids oldest first until the slots are full, and reaps.
func TestSweepStartsQueuedAndReaps(t *testing.T) {
	store := redistest.Open(t)
	var mu sync.Mutex
	var order []string
	reaped := make(chan struct{}, 1)
	block := make(chan struct{})
	p := leasedrun.New(leasedrun.Config{Leases: store, Owner: "a", LeaseTTL: 3 * time.Second, MaxConcurrent: 2, SweepInterval: 50 * time.Millisecond,
		LeaseName: leaseName,
		Claim: func(_ context.Context, id string, _ state.Lease) (leasedrun.Job, error) {
			mu.Lock()
			order = append(order, id)
			mu.Unlock()
			return func(ctx context.Context, _ *leasedrun.Held) {
				select {
				case <-block:
				case <-ctx.Done():
				}
			}, nil
		},
		Queued: func(context.Context) ([]string, error) { return []string{"old", "mid", "new"}, nil },
		Reap: func(context.Context) error {
			select {
			case reaped <- struct{}{}:
			default:
			}
			return nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Sweep(ctx); close(done) }()
	<-reaped
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	got := append([]string(nil), order...)
	mu.Unlock()
	if len(got) != 2 || got[0] != "old" || got[1] != "mid" {
		t.Fatalf("started %v, want [old mid] (two slots, oldest first)", got)
	}
	cancel()
	<-done
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Running("old") || p.Running("mid") {
		t.Fatal("Close returned with jobs still running")
	}
	close(block)
}
