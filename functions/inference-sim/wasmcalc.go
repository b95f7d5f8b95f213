package inferencesim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/wasm-modules/latency"
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
func (w *WASMCalculators) Resolve(name string, p latency.Config) (latency.Calculator, error) {
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
	c, err := w.host.Calculator(strings.TrimPrefix(name, "wasm:"), p.JSON())
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close releases the host and every calculator it configured.
func (w *WASMCalculators) Close(ctx context.Context) error {
	if w.host == nil {
		return nil
	}
	return w.host.Close(ctx)
}
