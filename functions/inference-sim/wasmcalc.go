package inferencesim

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lensfn/lensfn/functions/inference-sim/latency"
	"github.com/lensfn/lensfn/runtime/wasmhost"
)

// IsModuleCalculator reports whether --latency-calculator names a WASM module: a path to a
// .wasm file, or wasm:<name> for a module loaded from the module directories.
func IsModuleCalculator(name string) bool {
	return strings.HasPrefix(name, "wasm:") || strings.HasSuffix(name, ".wasm") || strings.ContainsRune(name, filepath.Separator)
}

// ModuleDirs say where WASM calculators come from (read from the environment by the command).
type ModuleDirs struct {
	Builtin string // LENS_BUILTIN_MODULE_DIR: the modules `make wasm` builds
	User    string // LENS_MODULE_DIR: user modules with their manifest
	Cache   string // LENS_CACHE_DIR: the compilation cache
}

// WASMCalculators resolves built-in names natively and module calculators through a WASM host
// started on first use; the schedule comes from one guest call per request.
type WASMCalculators struct {
	Dirs ModuleDirs
	once sync.Once
	host *wasmhost.Host
	err  error
}

// Resolve is a CalculatorResolver (pass it with WithCalculatorResolver).
func (w *WASMCalculators) Resolve(name string, p latency.Params) (latency.Calculator, error) {
	if !IsModuleCalculator(name) {
		return latency.New(name, p)
	}
	w.once.Do(func() {
		cfg := wasmhost.Config{CacheDir: w.Dirs.Cache, BuiltinDir: w.Dirs.Builtin}
		if w.Dirs.User != "" {
			cfg.ModuleDirs = []string{w.Dirs.User}
		}
		w.host, w.err = wasmhost.New(context.Background(), cfg)
	})
	if w.err != nil {
		return nil, fmt.Errorf("load WASM modules: %w", w.err)
	}
	c, err := w.host.Calculator(strings.TrimPrefix(name, "wasm:"), paramsJSON(p))
	if err != nil {
		return nil, err
	}
	return wasmCalculator{c}, nil
}

// Close releases the host and every calculator it configured.
func (w *WASMCalculators) Close(ctx context.Context) error {
	if w.host == nil {
		return nil
	}
	return w.host.Close(ctx)
}

// paramsJSON hands the latency flags to a module under their flag names, durations in
// milliseconds (fractions keep nanosecond precision).
func paramsJSON(p latency.Params) []byte {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	raw, _ := json.Marshal(map[string]float64{
		"time-to-first-token": ms(p.TimeToFirstToken), "time-to-first-token-std-dev": ms(p.TimeToFirstTokenStdDev),
		"inter-token-latency": ms(p.InterTokenLatency), "inter-token-latency-std-dev": ms(p.InterTokenLatencyStdDev),
		"kv-cache-transfer-latency": ms(p.KVCacheTransferLatency), "kv-cache-transfer-latency-std-dev": ms(p.KVCacheTransferLatencyStdDev),
		"prefill-overhead": ms(p.PrefillOverhead), "prefill-time-per-token": ms(p.PrefillTimePerToken),
		"prefill-time-std-dev": ms(p.PrefillTimeStdDev), "kv-cache-transfer-time-per-token": ms(p.KVCacheTransferTimePerToken),
		"kv-cache-transfer-time-std-dev": ms(p.KVCacheTransferTimeStdDev), "time-factor-under-load": max(p.TimeFactorUnderLoad, 1),
	})
	return raw
}

type wasmCalculator struct{ c *wasmhost.Calculator }

func (w wasmCalculator) Schedule(in latency.Input, gaps []time.Duration) (time.Duration, []time.Duration, error) {
	return w.c.Schedule(wasmhost.LatencyInput{PromptTokens: in.PromptTokens, CachedPromptTokens: in.CachedPromptTokens,
		OutputTokens: in.OutputTokens, RunningRequests: in.RunningRequests, MaxNumSeqs: in.MaxNumSeqs,
		RemotePrefill: in.RemotePrefill, Rand: in.Rand}, gaps)
}
