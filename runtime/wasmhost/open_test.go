package wasmhost_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// Open loads the built-ins through the compilation cache and names the failure when a
// directory cannot be loaded.
func TestOpen(t *testing.T) {
	h, err := wasmhost.Open(context.Background(), wasmhost.Dirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	for _, s := range h.Status() { // a cold cache compiles in the background
		if err := h.Wait(context.Background(), s.Name); err != nil {
			t.Fatal(err)
		}
	}
	// From the now warm cache every module is ready when Open returns: nothing to wait for.
	warm, err := wasmhost.Open(context.Background(), wasmhost.Dirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close(context.Background())
	if got := warm.Compiling(); len(got) != 0 {
		t.Fatalf("a warm Open still compiles %v", got)
	}
	if _, err := warm.Calculator("constant", []byte(`{"time-to-first-token":"1ms"}`)); err != nil {
		t.Fatalf("built-in calculator: %v", err)
	}
	_, err = wasmhost.Open(context.Background(), wasmhost.Dirs{User: t.TempDir()}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "load WASM modules: ") || !strings.Contains(err.Error(), "manifest.json") {
		t.Fatalf("a user directory without a manifest: %v", err)
	}
}

// Open returns before its modules are loaded: a module whose load is held answers a
// CompilingError naming it, Status and Compiling say so, Wait blocks until it is ready, and
// then the module works. Nothing sleeps: the load is held on a channel.
func TestOpenCompilesInTheBackground(t *testing.T) {
	release := make(chan struct{})
	h, err := wasmhost.OpenBlocked(context.Background(), wasmhost.Dirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)},
		func(ctx context.Context, name string) {
			if name == "constant" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())

	_, err = h.Calculator("constant", []byte(`{"time-to-first-token":"1ms"}`))
	var compiling *wasmhost.CompilingError
	if !errors.As(err, &compiling) || !errors.Is(err, wasmhost.ErrCompiling) || compiling.Module != "constant" ||
		!strings.Contains(err.Error(), "compiling WASM module constant, first start only") {
		t.Fatalf("a module still loading: %v, want a CompilingError naming constant", err)
	}
	// The other modules are not held back by the one still loading.
	for _, s := range h.Status() {
		if s.Name != "constant" {
			if err := h.Wait(context.Background(), s.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := h.Compiling(); !slices.Equal(got, []string{"constant"}) {
		t.Fatalf("Compiling() = %v, want [constant]", got)
	}
	states := map[string]wasmhost.ModuleState{}
	for _, s := range h.Status() {
		states[s.Name] = s.State
	}
	if states["constant"] != wasmhost.StateCompiling || len(states) < 2 {
		t.Fatalf("Status() = %v, want constant compiling among the built-ins", states)
	}
	if _, err := h.Parser("mooncake_trace"); err != nil {
		t.Fatalf("a loaded module while another compiles: %v", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Wait(cancelled, "constant"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context on a compiling module: %v", err)
	}

	close(release)
	if err := h.Wait(context.Background(), "constant"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Calculator("constant", []byte(`{"time-to-first-token":"1ms"}`)); err != nil {
		t.Fatalf("after its load: %v", err)
	}
	if got := h.Compiling(); len(got) != 0 {
		t.Fatalf("Compiling() = %v after every load", got)
	}
}

// Close does not hang on a load that is held: the hook's context is cancelled.
func TestCloseCancelsHeldLoads(t *testing.T) {
	entered := make(chan struct{}, 16)
	h, err := wasmhost.OpenBlocked(context.Background(), wasmhost.Dirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)},
		func(ctx context.Context, name string) {
			entered <- struct{}{}
			<-ctx.Done()
		})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Parser("mooncake_trace"); !errors.Is(err, wasmhost.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
