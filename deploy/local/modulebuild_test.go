package local

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "build.sh")
	if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitBuild(t *testing.T, b *ModuleBuild) error {
	t.Helper()
	select {
	case <-b.Done():
		return b.Err()
	case <-time.After(time.Minute):
		t.Fatal("the module build did not end")
		return nil
	}
}

// The stack builds what the manifest lists as pending (not what failed, not what is built).
func TestPendingModules(t *testing.T) {
	dir := t.TempDir()
	if got, err := PendingModules(dir); err != nil || got != nil {
		t.Fatalf("no manifest: %v %v", got, err)
	}
	manifest := `{"manifest_version":1,"modules":[{"file":"a.wasm","sha256":"x","kind":"trace-parser","name":"a"}],` +
		`"pending":[{"name":"baseten_trace","kind":"trace-parser"},{"name":"b","kind":"trace-parser","error":"go build failed"}]}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := PendingModules(dir); err != nil || !slices.Equal(got, []string{"baseten_trace"}) {
		t.Fatalf("PendingModules = %v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PendingModules(dir); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Fatalf("a bad manifest: %v", err)
	}
}

// The build runs the script as `script DIR --only NAME`, its output in the log; a failure is
// an error naming the command, and the log's tail shows why.
func TestModuleBuildRunsTheScript(t *testing.T) {
	dir := t.TempDir()
	ok := writeScript(t, `echo "args: $*"; echo built >"$1/out"`+"\n")
	b, err := StartModuleBuild(context.Background(), ok, dir, filepath.Join(t.TempDir(), "logs", "wasm-build.log"), []string{"baseten_trace"})
	if err != nil {
		t.Fatal(err)
	}
	if err := waitBuild(t, b); err != nil {
		t.Fatalf("a build that succeeds: %v", err)
	}
	if got := b.LogTail(5); got != "args: "+dir+" --only baseten_trace" {
		t.Fatalf("log = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}

	failing := writeScript(t, "for i in $(seq 1 30); do echo line $i; done; echo 'baseten: undefined: parquet' >&2; exit 3\n")
	b, err = StartModuleBuild(context.Background(), failing, dir, filepath.Join(t.TempDir(), "wasm-build.log"), []string{"baseten_trace"})
	if err != nil {
		t.Fatal(err)
	}
	err = waitBuild(t, b)
	if err == nil || !strings.Contains(err.Error(), "--only baseten_trace") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("a failing build: %v", err)
	}
	tail := b.LogTail(3)
	if tail != "line 29\nline 30\nbaseten: undefined: parquet" {
		t.Fatalf("tail = %q", tail)
	}

	if _, err := StartModuleBuild(context.Background(), filepath.Join(dir, "missing.sh"), dir, filepath.Join(dir, "log"), []string{"baseten_trace"}); err == nil ||
		!strings.Contains(err.Error(), "make wasm") {
		t.Fatalf("no script: %v", err)
	}
}

// Ctrl-C (the context) stops the build and every process it started (go build's compilers
// are its grandchildren): nothing of it outlives the stack.
func TestModuleBuildStopsWithItsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := writeScript(t, `sleep 600 & echo $! >"`+pidFile+`.tmp"; mv "`+pidFile+`.tmp" "`+pidFile+`"; wait`+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	b, err := StartModuleBuild(ctx, script, dir, filepath.Join(dir, "log"), []string{"baseten_trace"})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(time.Minute); pid == 0; {
		if raw, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
		} else if time.Now().After(deadline) {
			t.Fatal("the script did not start its child")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	select {
	case <-b.Done():
		t.Fatalf("the build ended before it was stopped: %v", b.Err())
	default:
	}
	cancel()
	if err := waitBuild(t, b); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("a stopped build: %v", err)
	}
	// Done waits for the group: the grandchild is gone (or a zombie its init has not reaped).
	if err := syscall.Kill(pid, 0); err == nil {
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(stat), ") Z ") {
			t.Fatalf("the build's child %d outlived the stop: %s", pid, stat)
		}
	}
}
