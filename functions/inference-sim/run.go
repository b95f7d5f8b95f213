package inferencesim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
)

// ErrUsage is returned by Run for a bad command line (exit status 2).
var ErrUsage = errors.New("usage")

// Run parses the command line, builds the simulator and serves until
// SIGTERM or SIGINT, then drains in-flight requests.
func Run(ctx context.Context, args []string, env Environment, stderr io.Writer, opts ...Option) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprint(stderr, Usage())
			return nil
		}
	}
	cfg, err := ParseConfig(args, env, nil)
	if err != nil {
		fmt.Fprintf(stderr, "inference-sim: %v\n\n%s", err, Usage())
		return ErrUsage
	}
	sim, err := New(cfg, opts...)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return sim.Serve(ctx)
}
