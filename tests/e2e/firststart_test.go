package e2e_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/tests/stacktest"
)

// A first start serves before the WASM modules are compiled: the stack starts the functions
// without waiting, routes that need no module answer, the one that needs the module still
// compiling answers 503 naming it, the stack reports it as warming, and once it compiles the
// route works. The compilation is held deterministically: the test holds the cache's compile
// lock of mooncake_trace (the lock functions sharing a cache take while compiling), on a cache
// where every other module is already verified.
func TestStackServesWhileModulesCompile(t *testing.T) {
	shared := wasmtest.CacheDir(t)
	builtin := wasmtest.BuiltinDir(t)
	warm, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: shared, BuiltinDir: builtin}) // make the shared cache warm
	if err != nil {
		t.Fatal(err)
	}
	warm.Close(context.Background())
	man, err := wasmhost.ReadManifest(builtin)
	if err != nil {
		t.Fatal(err)
	}
	var held string
	cache := t.TempDir()
	for _, e := range man.Modules {
		if e.Name == "mooncake_trace" {
			held = strings.ToLower(e.SHA256)
		}
	}
	// The new cache shares wazero's compiled code but has not verified mooncake_trace.
	entries, err := os.ReadDir(shared)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "lensfn-descriptors" {
			if err := os.Symlink(filepath.Join(shared, e.Name()), filepath.Join(cache, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, e := range man.Modules {
		if e.Name == "mooncake_trace" {
			continue
		}
		sum := strings.ToLower(e.SHA256)
		raw, err := os.ReadFile(wasmhost.DescriptorFile(shared, sum))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(wasmhost.DescriptorFile(cache, sum)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(wasmhost.DescriptorFile(cache, sum), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := os.OpenFile(wasmhost.CompileLockPath(cache, held), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	stack := stacktest.Start(t, stacktest.Options{Only: []string{"simulation-api"}, Env: map[string]string{"LENS_CACHE_DIR": cache}, Cold: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if got := stack.Warming(ctx); len(got) != 1 || got[0] != "compiling WASM module mooncake_trace" {
		t.Fatalf("the stack's warming work while mooncake_trace is held: %v", got)
	}
	api := stack.APIURL + "/api/simulation"
	if code, body := get(t, api+"/backends"); code != http.StatusOK {
		t.Fatalf("backends while a module compiles: %d %s", code, body)
	}
	timeline := api + "/trace-datasets/lensfn-sample-chat/timeline?bins=60"
	resp, body := getResponse(t, timeline)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, "compiling WASM module mooncake_trace, first start only") {
		t.Fatalf("timeline while mooncake_trace compiles: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	lock.Close() // the function takes the lock, finds the compiled code in the cache, and verifies it
	var done []string
	if err := stack.WaitWarm(ctx, func(item string) { done = append(done, item) }); err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0] != "compiling WASM module mooncake_trace" {
		t.Fatalf("WaitWarm reported %v", done)
	}
	if code, body := get(t, timeline); code != http.StatusOK || !strings.Contains(body, `"request_count"`) {
		t.Fatalf("timeline once compiled: %d %s", code, body)
	}
}

// getResponse is get with the response's headers.
func getResponse(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, body, err := fetch(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
