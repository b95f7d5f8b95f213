package leasedrun

import (
	"context"
	"errors"
	"time"
)

// Periodic runs a stage's sweep of its records on a timer, from the function's Start hook
// until the function drains (the deployer's sweep and evidence refresh, the orchestrator's
// sweep; the pool's Sweep adds its own wake-ups to the same loop).
type Periodic struct {
	Interval time.Duration
	// Delayed makes the first sweep wait one interval; otherwise it runs at once (the work a
	// killed instance left is taken up at start).
	Delayed bool
	// Log is where a failed sweep is logged, as Msg with its error (nil: not logged). A sweep
	// that failed because ctx ended, or with one of QuietErrors, is not logged.
	Log         Logger
	Msg         string
	QuietErrors []error
}

// Run calls sweep at once (after one interval when Delayed) and then every interval, until
// ctx ends; it returns once ctx has ended, never during a sweep. A sweep that takes longer
// than the interval is followed by the next at once, not by several.
func (p Periodic) Run(ctx context.Context, sweep func(context.Context) error) {
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	for first := !p.Delayed; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		if err := sweep(ctx); err != nil {
			logFailure(ctx, p.Log, p.QuietErrors, p.Msg, err)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// logFailure logs a sweep's error unless ctx ended or the error is a quiet one.
func logFailure(ctx context.Context, log Logger, quiet []error, msg string, err error) {
	if ctx.Err() != nil || log == nil {
		return
	}
	for _, q := range quiet {
		if errors.Is(err, q) {
			return
		}
	}
	log.Warnw(msg, "error", err)
}
