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
// defaults of Config, whose load errors say that the modules failed to load. log (optional)
// hears about each module compiled on a cold cache.
func Open(ctx context.Context, dirs Dirs, log func(format string, args ...any)) (*Host, error) {
	cfg := Config{CacheDir: dirs.Cache, BuiltinDir: dirs.Builtin, Log: log}
	if dirs.User != "" {
		cfg.ModuleDirs = []string{dirs.User}
	}
	h, err := New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("load WASM modules: %w", err)
	}
	return h, nil
}
