package leasedrun_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore/redistest"
)

// A lease held with Hold is renewed past its TTL. One that expired (here: released behind the
// holder's back) is taken again under Retake and ends the work under SameToken; one another
// owner took ends the work under either, with the cause state.ErrLeaseLost.
func TestHoldRenewsAndEndsTheWorkOnLoss(t *testing.T) {
	const ttl = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		renewal leasedrun.Renewal
	}{{"Retake", leasedrun.Retake}, {"SameToken", leasedrun.SameToken}} {
		t.Run(tc.name, func(t *testing.T) {
			store := redistest.Open(t)
			bg := context.Background()
			first, err := store.AcquireLease(bg, "job:x", "a", ttl)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel, h := leasedrun.Hold(bg, store, first, ttl, tc.renewal)
			defer cancel()
			waitFor(t, "a renewal", func() bool { return h.Lease().ExpiresAt.After(first.ExpiresAt) })
			time.Sleep(ttl)
			if holder, err := store.LeaseHolder(bg, "job:x"); err != nil || holder.Token != first.Token || ctx.Err() != nil {
				t.Fatalf("after a TTL: holder %+v (%v), work ended: %v", holder, err, ctx.Err())
			}

			if err := store.ReleaseLease(bg, h.Lease()); err != nil { // it expires
				t.Fatal(err)
			}
			if tc.renewal == leasedrun.SameToken {
				waitFor(t, "the work to end", func() bool { return ctx.Err() != nil })
				if cause := context.Cause(ctx); !errors.Is(cause, state.ErrLeaseLost) {
					t.Fatalf("cause %v, want ErrLeaseLost", cause)
				}
				if h.Fence() != first.Fence() {
					t.Fatalf("fence %+v, want the first %+v", h.Fence(), first.Fence())
				}
				return
			}
			waitFor(t, "the lease taken again", func() bool { return h.Fence().Token > first.Token })
			if ctx.Err() != nil {
				t.Fatalf("the work ended (%v) though the lease was taken again", context.Cause(ctx))
			}
			// Another owner takes it between two renewals.
			waitFor(t, "b to take the lease", func() bool {
				if holder, err := store.LeaseHolder(bg, "job:x"); err == nil {
					_ = store.ReleaseLease(bg, holder)
				}
				_, err := store.AcquireLease(bg, "job:x", "b", time.Minute)
				return err == nil
			})
			waitFor(t, "the work to end", func() bool { return ctx.Err() != nil })
			if cause := context.Cause(ctx); !errors.Is(cause, state.ErrLeaseLost) {
				t.Fatalf("cause %v, want ErrLeaseLost", cause)
			}
		})
	}
}

// cancel stops the renewal before it returns: the lease is not renewed afterwards.
func TestHoldCancelStopsTheRenewal(t *testing.T) {
	const ttl = 150 * time.Millisecond
	store := redistest.Open(t)
	bg := context.Background()
	first, err := store.AcquireLease(bg, "job:x", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel, h := leasedrun.Hold(bg, store, first, ttl, leasedrun.Retake)
	waitFor(t, "a renewal", func() bool { return h.Lease().ExpiresAt.After(first.ExpiresAt) })
	cancel()
	if ctx.Err() == nil {
		t.Fatal("the work's context did not end with cancel")
	}
	last := h.Lease()
	time.Sleep(ttl)
	if h.Lease() != last {
		t.Fatal("renewed after cancel")
	}
	waitFor(t, "the lease to expire", func() bool {
		_, err := store.LeaseHolder(bg, "job:x")
		return errors.Is(err, state.ErrNotFound)
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
