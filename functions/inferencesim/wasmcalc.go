package inferencesim

import (
	"context"
	"strings"
	"sync"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// ModuleDirs say where WASM calculators come from (read from the environment by the command).
type ModuleDirs = wasmhost.Dirs

// WASMCalculators resolves built-in names natively and module calculators through a WASM host
// started on first use; the schedule comes from one guest call per request.
type WASMCalculators struct {
	Dirs ModuleDirs
	once sync.Once
	host *wasmhost.Host
	err  error
}

// Resolve is a CalculatorResolver (pass it with WithCalculatorResolver).
func (w *WASMCalculators) Resolve(name string, p latency.Config) (latency.Calculator, error) {
	if !config.IsModuleCalculator(name) {
		return latency.New(name, p)
	}
	w.once.Do(func() { w.host, w.err = wasmhost.Open(context.Background(), w.Dirs, nil) })
	if w.err != nil {
		return nil, w.err
	}
	// Open compiles in the background; resolving a calculator waits for its module.
	module := strings.TrimPrefix(name, "wasm:")
	if err := w.host.Wait(context.Background(), module); err != nil {
		return nil, err
	}
	return w.host.Calculator(module, p.JSON())
}

// ResolveStepCost is a StepCostResolver: the step-cost module named wasm:<name> (a loaded
// module) or by path, configured with cfg.
func (w *WASMCalculators) ResolveStepCost(name string, cfg stepcost.Config) (EngineStepCost, error) {
	w.once.Do(func() { w.host, w.err = wasmhost.Open(context.Background(), w.Dirs, nil) })
	if w.err != nil {
		return nil, w.err
	}
	module := strings.TrimPrefix(name, "wasm:")
	if err := w.host.Wait(context.Background(), module); err != nil {
		return nil, err
	}
	return w.host.StepCost(module, cfg)
}

// Close releases the host and every calculator it configured.
func (w *WASMCalculators) Close(ctx context.Context) error {
	if w.host == nil {
		return nil
	}
	return w.host.Close(ctx)
}
