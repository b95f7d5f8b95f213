package wasmhost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// pendingDir is a module directory as `build.sh --defer mooncake_trace` leaves it: constant
// built, mooncake_trace pending. It returns the directory and mooncake_trace's bytes.
func pendingDir(t *testing.T, pendingError string) (string, []byte) {
	t.Helper()
	src := wasmtest.BuiltinDir(t)
	dir := t.TempDir()
	constant, err := os.ReadFile(filepath.Join(src, "constant.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	mooncake, err := os.ReadFile(filepath.Join(src, "mooncake_trace.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "constant.wasm"), constant, 0o644); err != nil {
		t.Fatal(err)
	}
	writeManifest(t, dir, wasmhost.Manifest{ManifestVersion: 1,
		Modules: []wasmhost.ManifestEntry{entry("constant", "latency-calculator", constant)},
		Pending: []wasmhost.PendingEntry{{Name: "mooncake_trace", Kind: "trace-parser", Error: pendingError}}})
	return dir, mooncake
}

func entry(name, kind string, bin []byte) wasmhost.ManifestEntry {
	sum := sha256.Sum256(bin)
	return wasmhost.ManifestEntry{File: name + ".wasm", SHA256: hex.EncodeToString(sum[:]), Kind: kind, Name: name}
}

// writeManifest replaces dir's manifest atomically, as build.sh does.
func writeManifest(t *testing.T, dir string, m wasmhost.Manifest) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "manifest.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, wasmhost.ManifestFile)); err != nil {
		t.Fatal(err)
	}
}

// arrive is the end of the deferred build: the module file, then the manifest listing both.
func arrive(t *testing.T, dir string, file, mooncake []byte) {
	t.Helper()
	constant, _ := os.ReadFile(filepath.Join(dir, "constant.wasm"))
	if err := os.WriteFile(filepath.Join(dir, "mooncake_trace.wasm"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	writeManifest(t, dir, wasmhost.Manifest{ManifestVersion: 1, Modules: []wasmhost.ManifestEntry{
		entry("constant", "latency-calculator", constant), entry("mooncake_trace", "trace-parser", mooncake)}})
}

// A module pending in the manifest (its build still under way) is "building": a lookup is a
// CompilingError naming it, Status and Warming say so, the other modules work; once the build
// puts the file and a manifest listing it in place, the next lookup loads it (verified against
// the new manifest's sha256) and it parses.
func TestPendingModuleIsBuildingThenLoads(t *testing.T) {
	dir, mooncake := pendingDir(t, "")
	h, err := wasmhost.Open(context.Background(), wasmhost.Dirs{Builtin: dir, Cache: wasmtest.CacheDir(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())

	_, err = h.Parser("mooncake_trace")
	var compiling *wasmhost.CompilingError
	if !errors.As(err, &compiling) || !errors.Is(err, wasmhost.ErrCompiling) || compiling.Module != "mooncake_trace" || !compiling.Building ||
		err.Error() != "building WASM module mooncake_trace, first start only; try again shortly" {
		t.Fatalf("a pending module: %v, want a CompilingError saying it is being built", err)
	}
	if err := h.Wait(context.Background(), "constant"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Calculator("constant", []byte(`{"time-to-first-token":"1ms"}`)); err != nil {
		t.Fatalf("a built module beside a pending one: %v", err)
	}
	if got := h.Warming(); !slices.Equal(got, []string{"building WASM module mooncake_trace"}) {
		t.Fatalf("Warming() = %v", got)
	}
	states := map[string]wasmhost.ModuleState{}
	for _, s := range h.Status() {
		states[s.Name] = s.State
	}
	if states["mooncake_trace"] != wasmhost.StateBuilding || states["constant"] != wasmhost.StateReady {
		t.Fatalf("Status() = %v", states)
	}

	arrive(t, dir, mooncake, mooncake)
	if _, err := h.Parser("mooncake_trace"); err != nil && !errors.Is(err, wasmhost.ErrCompiling) {
		t.Fatalf("once built: %v", err)
	}
	if err := h.Wait(context.Background(), "mooncake_trace"); err != nil {
		t.Fatal(err)
	}
	p, err := h.Parser("mooncake_trace")
	if err != nil {
		t.Fatalf("once built and compiled: %v", err)
	}
	trace := writeFile(t, "t.jsonl", `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}`+"\n")
	n := 0
	if _, err := p.Parse(context.Background(), wasmhost.Source{Path: trace}, wasmhost.ParseOptions{}, func(*wasmhost.TraceRequest) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("parse through the module built later: %d requests, %v", n, err)
	}
	if got := h.Warming(); len(got) != 0 {
		t.Fatalf("Warming() = %v once everything is built", got)
	}
}

// Nothing has to look the module up: the host watches the manifest (PendingPoll), so Wait
// (an event stage) and readiness end when the build does.
func TestPendingModuleIsWatched(t *testing.T) {
	dir, mooncake := pendingDir(t, "")
	h := newHost(t, wasmhost.Config{BuiltinDir: dir, Async: true, PendingPoll: 5 * time.Millisecond})
	waited := make(chan error, 1)
	go func() { waited <- h.Wait(context.Background(), "mooncake_trace") }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v before the module was built", err)
	case <-time.After(50 * time.Millisecond): // ten polls of an unchanged manifest
	}
	arrive(t, dir, mooncake, mooncake)
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Wait did not end after the build (still %v)", h.Warming())
	}
	if _, err := h.Parser("mooncake_trace"); err != nil {
		t.Fatal(err)
	}
}

// A file that does not match the manifest that lists it (half written, or corrupt) is never
// loaded: the module fails with ErrChecksum and says so.
func TestPendingModuleRefusesAHalfWrittenFile(t *testing.T) {
	dir, mooncake := pendingDir(t, "")
	h, err := wasmhost.Open(context.Background(), wasmhost.Dirs{Builtin: dir, Cache: wasmtest.CacheDir(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	arrive(t, dir, mooncake[:len(mooncake)/2], mooncake)
	if _, err := h.Parser("mooncake_trace"); !errors.Is(err, wasmhost.ErrChecksum) || !strings.Contains(err.Error(), "mooncake_trace failed to load") {
		t.Fatalf("a half-written module: %v, want ErrChecksum", err)
	}
	for _, s := range h.Status() {
		if s.Name == "mooncake_trace" && (s.State != wasmhost.StateFailed || !strings.Contains(s.Error, "sha256")) {
			t.Fatalf("status of a refused module: %+v", s)
		}
	}
}

// A failed build (the pending entry's error, as build.sh writes it) is a failure naming the
// module, not a wait; so is a pending module the manifest drops.
func TestPendingModuleBuildFailed(t *testing.T) {
	dir, _ := pendingDir(t, "go build failed; see the output of wasm-modules/build.sh")
	h, err := wasmhost.Open(context.Background(), wasmhost.Dirs{Builtin: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Parser("mooncake_trace"); err == nil || errors.Is(err, wasmhost.ErrCompiling) ||
		!strings.Contains(err.Error(), "building WASM module mooncake_trace failed: go build failed") {
		t.Fatalf("a failed build: %v", err)
	}
	if err := h.Wait(context.Background(), "mooncake_trace"); err != nil {
		t.Fatal(err)
	}

	dir, _ = pendingDir(t, "")
	h2, err := wasmhost.Open(context.Background(), wasmhost.Dirs{Builtin: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close(context.Background())
	constant, _ := os.ReadFile(filepath.Join(dir, "constant.wasm"))
	writeManifest(t, dir, wasmhost.Manifest{ManifestVersion: 1, Modules: []wasmhost.ManifestEntry{entry("constant", "latency-calculator", constant)}})
	if _, err := h2.Parser("mooncake_trace"); err == nil || errors.Is(err, wasmhost.ErrCompiling) || !strings.Contains(err.Error(), "no longer lists it") {
		t.Fatalf("a pending module the manifest dropped: %v", err)
	}
}

// The pending list is checked like the modules: a name listed twice or a kind the ABI does
// not have is refused, and a host that does not load in the background refuses pending
// modules rather than waiting at start.
func TestPendingManifestIsChecked(t *testing.T) {
	dir, mooncake := pendingDir(t, "")
	if _, err := wasmhost.New(context.Background(), wasmhost.Config{BuiltinDir: dir}); err == nil || !strings.Contains(err.Error(), "still being built") {
		t.Fatalf("a synchronous host with a pending module: %v", err)
	}
	for _, tc := range []struct {
		pending wasmhost.PendingEntry
		want    string
	}{
		{wasmhost.PendingEntry{Name: "mooncake_trace", Kind: "trace-parser"}, "listed twice"},
		{wasmhost.PendingEntry{Name: "x", Kind: "compiler"}, "kind"},
		{wasmhost.PendingEntry{Kind: "trace-parser"}, "name is empty"},
	} {
		writeManifest(t, dir, wasmhost.Manifest{ManifestVersion: 1, Modules: []wasmhost.ManifestEntry{entry("mooncake_trace", "trace-parser", mooncake)},
			Pending: []wasmhost.PendingEntry{tc.pending}})
		if _, err := wasmhost.ReadManifest(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pending %+v: %v, want %q", tc.pending, err, tc.want)
		}
	}
}

// A module present at start whose file does not match its manifest fails on its own (its
// lookups say why) while the others load; the quick warm-cache path and the background load
// record it once (it used to be recorded twice: a panic).
func TestOpenRefusesAModuleThatDoesNotMatch(t *testing.T) {
	dir, mooncake := pendingDir(t, "")
	arrive(t, dir, mooncake[:len(mooncake)/2], mooncake) // the manifest pins the whole file
	h, err := wasmhost.Open(context.Background(), wasmhost.Dirs{Builtin: dir, Cache: wasmtest.CacheDir(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	for _, name := range []string{"mooncake_trace", "constant"} {
		if err := h.Wait(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Parser("mooncake_trace"); !errors.Is(err, wasmhost.ErrChecksum) {
		t.Fatalf("a module that does not match its manifest: %v", err)
	}
	if _, err := h.Calculator("constant", []byte(`{"time-to-first-token":"1ms"}`)); err != nil {
		t.Fatalf("the module beside it: %v", err)
	}
}
