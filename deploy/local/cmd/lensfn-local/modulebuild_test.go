package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
)

// lockedBuffer is the stack's stdout: the build's goroutine writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func pendingModuleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	m := `{"manifest_version":1,"modules":[],"pending":[{"name":"baseten_trace","kind":"trace-parser"}]}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "build.sh")
	if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitReported(t *testing.T, reported <-chan struct{}) {
	t.Helper()
	select {
	case <-reported:
	case <-time.After(time.Minute):
		t.Fatal("the build's outcome was not printed")
	}
}

// make run's lines for the background build: that it runs (with its log), then that it is
// built, or FAILED with the end of its log; a manifest with nothing pending starts nothing.
func TestStartModuleBuildPrintsItsProgress(t *testing.T) {
	var out lockedBuffer
	modules, data := pendingModuleDir(t), t.TempDir()
	build, reported := startModuleBuild(context.Background(), &out, script(t, "echo compiling parquet-go\n"), modules, data)
	if build == nil {
		t.Fatalf("no build started:\n%s", out.String())
	}
	waitReported(t, reported)
	log := filepath.Join(data, "logs", "wasm-build.log")
	if got := out.String(); !strings.HasPrefix(got, "  Building: WASM module baseten_trace in the background (first start only; log: "+log+")\n") ||
		!strings.Contains(got, "\nbuilt WASM module baseten_trace in ") {
		t.Fatalf("printed:\n%s", got)
	}
	if raw, _ := os.ReadFile(log); string(raw) != "compiling parquet-go\n" {
		t.Fatalf("the build's log: %q", raw)
	}

	out = lockedBuffer{}
	build, reported = startModuleBuild(context.Background(), &out, script(t, "echo 'parquet.go:1: undefined: x' >&2; exit 1\n"), modules, data)
	waitReported(t, reported)
	if got := out.String(); build.Err() == nil || !strings.Contains(got, "FAILED to build WASM module baseten_trace after ") ||
		!strings.Contains(got, "exit status 1") || !strings.HasSuffix(got, "The end of "+log+":\nparquet.go:1: undefined: x\n") {
		t.Fatalf("a failed build printed:\n%s", got)
	}
	// The script died without writing its failure: the manifest now says it, so the functions
	// stop answering "building" and nothing is left pending.
	if left, err := local.PendingModules(modules); err != nil || len(left) != 0 {
		t.Fatalf("still pending after the build failed: %v %v", left, err)
	}
	if raw, _ := os.ReadFile(filepath.Join(modules, "manifest.json")); !strings.Contains(string(raw), `"error":"the background build failed (`) ||
		!strings.Contains(string(raw), `"name":"baseten_trace"`) {
		t.Fatalf("the manifest after a failed build: %s", raw)
	}

	// A build that cannot start marks the module failed too.
	out = lockedBuffer{}
	modules = pendingModuleDir(t)
	if build, _ := startModuleBuild(context.Background(), &out, filepath.Join(t.TempDir(), "no-such-build.sh"), modules, data); build != nil ||
		!strings.Contains(out.String(), "WARNING: not building WASM module baseten_trace") {
		t.Fatalf("a missing script: %q", out.String())
	}
	if left, _ := local.PendingModules(modules); len(left) != 0 {
		t.Fatalf("still pending when the build could not start: %v", left)
	}

	out = lockedBuffer{}
	if err := os.WriteFile(filepath.Join(modules, "manifest.json"), []byte(`{"manifest_version":1,"modules":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if build, _ := startModuleBuild(context.Background(), &out, script(t, "exit 1\n"), modules, data); build != nil || out.String() != "" {
		t.Fatalf("nothing pending started a build: %q", out.String())
	}
}
