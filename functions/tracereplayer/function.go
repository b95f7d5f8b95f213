package tracereplayer

import (
	"context"
	"errors"
	"os/exec"
	"sync"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/leasedrun"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/wasmhost"
)

// Build is the function's fn.Builder: it loads the parser modules and consumes task.queued
// events; its Start hook runs each backend's queue sweep.
func Build(ctx context.Context, d fn.Deps) (*fn.Function, error) {
	var settings Settings
	if err := d.Config.ReadSettings(&settings); err != nil {
		return nil, err
	}
	sealer, err := d.Config.Sealer()
	if err != nil {
		return nil, err
	}
	host, err := wasmhost.Open(ctx, wasmhost.Dirs{Builtin: d.Config.BuiltinModuleDir, User: d.Config.ModuleDir, Cache: d.Config.CacheDir}, d.Log.Infof)
	if err != nil {
		return nil, err
	}
	repo := &simtask.Repo{Store: d.Store, Sealer: sealer, DataDir: d.Config.DataDir}
	p := &replayer{host: host, dial: d.Egress.DialContext}
	runners := []*Runner{NewRunner(d, settings, repo, p.replay)}
	// The aiperf backend runs here too wherever the aiperf command is installed.
	if command, err := exec.LookPath("aiperf"); err == nil {
		a := &aiperfRunner{command: command, policy: d.Egress}
		runners = append(runners, newBackendRunner(BackendAIPerf, aiperfVersion(ctx, command), d, settings, repo, a.replay, "lens_aiperf"))
		d.Log.Infow("aiperf backend enabled", "command", command)
	}
	return &fn.Function{
		Warming: host.Warming,
		Events: map[string]cloudevent.Handler{Consumes[0]: func(ctx context.Context, e cloudevent.Event) error {
			for _, r := range runners {
				if err := r.onQueued(ctx, e); err != nil {
					return err
				}
			}
			return nil
		}},
		Start: func(ctx context.Context) {
			var wg sync.WaitGroup
			for _, r := range runners {
				wg.Go(func() { r.Sweep(ctx) })
			}
			wg.Wait()
		},
		Close: func(ctx context.Context) error {
			var err error
			for _, r := range runners {
				err = errors.Join(err, r.Close(ctx))
			}
			return errors.Join(err, host.Close(ctx))
		},
	}, nil
}

// NewRunner builds a runner of the trace-replayer backend whose replays are done by replay
// (tests pass a fake engine); its Sweep runs in the function's Start hook.
func NewRunner(d fn.Deps, s Settings, tasks *simtask.Repo, replay func(context.Context, *Run) (events.TaskReplayed, error)) *Runner {
	return newBackendRunner(Backend, Version, d, s, tasks, replay, "lens_replayer")
}

func newBackendRunner(backend, version string, d fn.Deps, s Settings, tasks *simtask.Repo,
	replay func(context.Context, *Run) (events.TaskReplayed, error), metricPrefix string) *Runner {
	r := &Runner{backend: backend, version: version, deps: d, log: d.Log, tasks: tasks, settings: s, replay: replay,
		metrics: newRunnerMetrics(d.Metrics.Registry, metricPrefix)}
	r.pool = leasedrun.New(leasedrun.Config{Leases: d.Store, Owner: r.owner(), LeaseTTL: s.LeaseTTL, MaxConcurrent: s.MaxConcurrent,
		SweepInterval: s.SweepInterval, LeaseName: simtask.LeaseName, Claim: r.claim, Queued: r.queued, Reap: r.reapLost,
		Log: d.Log, QuietErrors: []error{state.ErrUnavailable}})
	return r
}
