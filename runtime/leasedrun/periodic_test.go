package leasedrun_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/state"
)

// logged records what was logged.
type logged struct {
	mu    sync.Mutex
	lines []string
}

func (l *logged) Warnw(msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s %v", msg, kv))
}

func (l *logged) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// running starts p.Run with sweep and returns its cancel and a channel closed when Run returned.
func running(p leasedrun.Periodic, sweep func(context.Context) error) (context.CancelFunc, chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, sweep)
	}()
	return cancel, done
}

func stopped(t *testing.T, cancel context.CancelFunc, done chan struct{}) {
	t.Helper()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// The first sweep runs at once, or after one interval when Delayed.
func TestPeriodicFirstSweep(t *testing.T) {
	var n atomic.Int32
	swept := make(chan struct{}, 1)
	cancel, done := running(leasedrun.Periodic{Interval: time.Hour}, func(context.Context) error {
		n.Add(1)
		swept <- struct{}{}
		return nil
	})
	select {
	case <-swept:
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep at once")
	}
	stopped(t, cancel, done)
	if n.Load() != 1 {
		t.Fatalf("%d sweeps within the first hour, want 1", n.Load())
	}

	n.Store(0)
	cancel, done = running(leasedrun.Periodic{Interval: time.Hour, Delayed: true}, func(context.Context) error { n.Add(1); return nil })
	time.Sleep(100 * time.Millisecond)
	stopped(t, cancel, done)
	if n.Load() != 0 {
		t.Fatalf("a delayed sweep ran %d times before its first interval", n.Load())
	}

	const interval = 50 * time.Millisecond
	start := time.Now()
	first := make(chan time.Duration, 1)
	cancel, done = running(leasedrun.Periodic{Interval: interval, Delayed: true}, func(context.Context) error {
		select {
		case first <- time.Since(start):
		default:
		}
		return nil
	})
	select {
	case after := <-first:
		if after < interval {
			t.Fatalf("a delayed first sweep after %v, before its interval %v", after, interval)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delayed sweep")
	}
	stopped(t, cancel, done)
}

// Sweeps repeat every interval, never more often, and stop when the context ends.
func TestPeriodicRunsAtTheIntervalUntilCancelled(t *testing.T) {
	const interval = 20 * time.Millisecond
	var n atomic.Int32
	start := time.Now()
	cancel, done := running(leasedrun.Periodic{Interval: interval}, func(context.Context) error { n.Add(1); return nil })
	for deadline := time.Now().Add(10 * time.Second); n.Load() < 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sweeps in 10 s at an interval of %v", n.Load(), interval)
		}
	}
	stopped(t, cancel, done)
	elapsed := time.Since(start)
	got := n.Load()
	if most := int32(elapsed/interval) + 1; got > most {
		t.Fatalf("%d sweeps in %v: more than one at once and one per interval (%d)", got, elapsed, most)
	}
	time.Sleep(3 * interval)
	if n.Load() != got {
		t.Fatalf("%d sweeps after Run returned", n.Load()-got)
	}
}

// Run returns when the context ends during a sweep, once that sweep returned.
func TestPeriodicStopsDuringASweep(t *testing.T) {
	in, out := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	cancel, done := running(leasedrun.Periodic{Interval: time.Millisecond}, func(ctx context.Context) error {
		if n.Add(1) == 1 {
			close(in)
			<-ctx.Done()
			<-out
		}
		return ctx.Err()
	})
	<-in
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned during a sweep")
	case <-time.After(50 * time.Millisecond):
	}
	close(out)
	stopped(t, cancel, done)
	if n.Load() != 1 {
		t.Fatalf("%d sweeps, want the one cancelled", n.Load())
	}
}

// A failed sweep is logged with its error, unless the error is a quiet one or the context
// ended; the sweeps go on.
func TestPeriodicLogsFailures(t *testing.T) {
	log := &logged{}
	errs := []error{errors.New("list failed"), fmt.Errorf("%w: down", state.ErrUnavailable), nil}
	var n atomic.Int32
	three := make(chan struct{})
	cancel, done := running(leasedrun.Periodic{Interval: time.Millisecond, Log: log, Msg: "records sweep failed",
		QuietErrors: []error{state.ErrUnavailable}}, func(ctx context.Context) error {
		i := n.Add(1)
		if i == 3 {
			close(three)
		}
		if i <= 3 {
			return errs[i-1]
		}
		<-ctx.Done()
		return errors.New("cut short by the drain")
	})
	<-three
	stopped(t, cancel, done)
	if got := log.all(); len(got) != 1 || got[0] != "records sweep failed [error list failed]" {
		t.Fatalf("logged %q, want the one failure that is not quiet", got)
	}
}
