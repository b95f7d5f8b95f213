package wasmhost

import (
	"context"
	"fmt"
)

// Dirs say where a function's modules come from, as its configuration reads them from the
// environment.
type Dirs struct {
	Builtin string // LENS_BUILTIN_MODULE_DIR: the modules `make wasm` builds, with their manifest
	User    string // LENS_MODULE_DIR: user modules with their manifest; optional
	Cache   string // LENS_CACHE_DIR: the compilation cache; empty compiles on every start
}

// Open is the one set-up every function that runs modules shares: a host over dirs with the
// defaults of Config that compiles its modules in the background (Config.Async), so the
// function serves at once; a route that needs a module still compiling answers 503 (see
// CompilingError) and an event stage waits for it (Host.Wait). Modules verified before (a
// warm cache) are ready when Open returns. Its errors (a missing or bad manifest) say that
// the modules failed to load; a module that fails on its own (a checksum, a bad ABI) is
// StateFailed and its lookups say why. log (optional) hears when each
// module compiled on a cold cache starts and ends, and when all are ready.
func Open(ctx context.Context, dirs Dirs, log func(format string, args ...any)) (*Host, error) {
	return open(ctx, dirs, log, nil)
}

// OpenBlocked is Open whose every module's load first calls beforeLoad (for tests of what a
// function answers while a module compiles).
func OpenBlocked(ctx context.Context, dirs Dirs, beforeLoad func(ctx context.Context, name string)) (*Host, error) {
	return open(ctx, dirs, nil, beforeLoad)
}

func open(ctx context.Context, dirs Dirs, log func(format string, args ...any), beforeLoad func(context.Context, string)) (*Host, error) {
	cfg := Config{CacheDir: dirs.Cache, BuiltinDir: dirs.Builtin, Log: log, Async: true, BeforeLoad: beforeLoad}
	if dirs.User != "" {
		cfg.ModuleDirs = []string{dirs.User}
	}
	h, err := New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("load WASM modules: %w", err)
	}
	return h, nil
}
