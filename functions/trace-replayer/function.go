package tracereplayer

import (
	"context"
	"errors"
	"fmt"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/wasmhost"
)

// Build is the function's fn.Builder: it loads the parser modules, starts the queue sweep and
// consumes task.queued events.
func Build(ctx context.Context, d fn.Deps) (*fn.Function, error) {
	settings, err := settingsFrom(d.Config)
	if err != nil {
		return nil, err
	}
	sealer, err := secret.FromEnv(d.Config.Env("LENS_SECRET_KEY"))
	if err != nil {
		return nil, err
	}
	dirs := []string{}
	if d.Config.ModuleDir != "" {
		dirs = append(dirs, d.Config.ModuleDir)
	}
	host, err := wasmhost.New(ctx, wasmhost.Config{CacheDir: d.Config.CacheDir, BuiltinDir: d.Config.BuiltinModuleDir, ModuleDirs: dirs})
	if err != nil {
		return nil, fmt.Errorf("load WASM modules: %w", err)
	}
	p := &replayer{host: host}
	r := NewRunner(d, settings, &simtask.Repo{Store: d.Store, Sealer: sealer, DataDir: d.Config.DataDir}, p.replay)
	return &fn.Function{
		Events: map[string]cloudevent.Handler{Consumes[0]: r.onQueued},
		Close: func(ctx context.Context) error {
			err := r.Close(ctx)
			return errors.Join(err, host.Close(ctx))
		},
	}, nil
}

// NewRunner starts a runner whose replays are done by replay (tests pass a fake engine).
func NewRunner(d fn.Deps, s Settings, tasks *simtask.Repo, replay func(context.Context, *Run) (events.TaskReplayed, error)) *Runner {
	ctx, stop := context.WithCancel(context.Background())
	r := &Runner{deps: d, log: d.Log, tasks: tasks, settings: s, replay: replay, slots: make(chan struct{}, s.MaxConcurrent),
		running: map[string]context.CancelFunc{}, stop: stop, metrics: newRunnerMetrics(d.Metrics.Registry)}
	go r.sweep(ctx)
	return r
}
