package wasmhost_test

import (
	"context"
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
	if _, err := h.Calculator("constant", []byte(`{"time-to-first-token":"1ms"}`)); err != nil {
		t.Fatalf("built-in calculator: %v", err)
	}
	_, err = wasmhost.Open(context.Background(), wasmhost.Dirs{User: t.TempDir()}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "load WASM modules: ") || !strings.Contains(err.Error(), "manifest.json") {
		t.Fatalf("a user directory without a manifest: %v", err)
	}
}
