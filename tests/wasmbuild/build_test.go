package wasmbuild_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

func buildSh(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	root := wasmtest.RepoRoot(t)
	cmd := exec.Command(filepath.Join(root, "wasm-modules", "build.sh"), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func names(m wasmhost.Manifest) (modules, pending []string) {
	for _, e := range m.Modules {
		modules = append(modules, e.Name)
	}
	for _, p := range m.Pending {
		pending = append(pending, p.Name)
	}
	return modules, pending
}

// manifestFile is the manifest's identity and content: a run that changes nothing must not
// replace it (the functions re-read a replaced manifest).
func manifestFile(t *testing.T, dir string) (os.FileInfo, string) {
	t.Helper()
	path := filepath.Join(dir, wasmhost.ManifestFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	return st, string(b)
}

func TestDeferredModuleSet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the WASM modules")
	}
	out := t.TempDir()
	light := []string{"mooncake_trace", "bailian_trace", "burst_gpt_trace", "weka_public_dataset", "constant", "per-token", "stepcost"}

	// make wasm-first: seven modules, baseten_trace pending (and not built).
	if log, err := buildSh(t, nil, out, "--no-examples", "--defer", "baseten_trace"); err != nil {
		t.Fatalf("--defer: %v\n%s", err, log)
	}
	m, err := wasmhost.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if mods, pending := names(m); !slices.Equal(mods, light) || !slices.Equal(pending, []string{"baseten_trace"}) || m.Pending[0].Kind != "trace-parser" {
		t.Fatalf("after --defer: modules %v pending %v", mods, pending)
	}
	if _, err := os.Stat(filepath.Join(out, "baseten_trace.wasm")); err == nil {
		t.Fatal("--defer built the deferred module")
	}
	// Again, nothing changed: nothing is built and the manifest is not replaced.
	before, content := manifestFile(t, out)
	if log, err := buildSh(t, nil, out, "--no-examples", "--defer", "baseten_trace"); err != nil || !strings.Contains(log, "up to date") {
		t.Fatalf("a warm --defer: %v\n%s", err, log)
	}
	if after, again := manifestFile(t, out); !os.SameFile(before, after) || again != content {
		t.Fatal("a run that built nothing replaced the manifest")
	}

	// The background build: baseten_trace added, pinned by its sha256, nothing pending. The
	// seven others' stamps say their sources changed since they were built (an edit during the
	// background build): --only does not build them, so they must stay listed as built, not
	// turn pending with no build to come.
	stamps := map[string][]byte{}
	for _, name := range light {
		path := filepath.Join(out, ".stamps", name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		stamps[path] = b
		if err := os.WriteFile(path, []byte("sources-changed-since\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if log, err := buildSh(t, nil, out, "--only", "baseten_trace"); err != nil {
		t.Fatalf("--only: %v\n%s", err, log)
	}
	for path, b := range stamps {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err = wasmhost.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	mods, pending := names(m)
	if len(mods) != 8 || pending != nil || !slices.Contains(mods, "baseten_trace") {
		t.Fatalf("after --only: modules %v pending %v", mods, pending)
	}
	for _, e := range m.Modules {
		b, err := os.ReadFile(filepath.Join(out, e.File))
		sum := sha256.Sum256(b)
		if err != nil || hex.EncodeToString(sum[:]) != e.SHA256 {
			t.Fatalf("%s does not match its manifest entry: %v", e.File, err)
		}
	}
	// A warm make run (--defer again) and make wasm find everything up to date: the deferred
	// module stays listed, nothing is pending, nothing is built.
	for _, args := range [][]string{{out, "--no-examples", "--defer", "baseten_trace"}, {out, "--no-examples"}} {
		log, err := buildSh(t, nil, args...)
		m2, _ := wasmhost.ReadManifest(out)
		if mods, pending := names(m2); err != nil || !strings.Contains(log, "up to date") || len(mods) != 8 || pending != nil {
			t.Fatalf("build.sh %v once everything is built: %v modules %v pending %v\n%s", args[1:], err, mods, pending, log)
		}
	}

	// A failed build (the compiler cannot run) exits non-zero and writes the failure into the
	// pending entry, which the functions then answer with; the other modules stay listed.
	if err := os.Remove(filepath.Join(out, ".stamps", "baseten_trace")); err != nil {
		t.Fatal(err)
	}
	log, err := buildSh(t, []string{"GOFLAGS=-toolexec=/bin/false"}, out, "--only", "baseten_trace")
	if err == nil || !strings.Contains(log, "baseten_trace failed") {
		t.Fatalf("a failing build: %v\n%s", err, log)
	}
	m, err = wasmhost.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if mods, pending := names(m); !slices.Equal(mods, light) || !slices.Equal(pending, []string{"baseten_trace"}) || !strings.Contains(m.Pending[0].Error, "go build failed") {
		t.Fatalf("after a failed build: modules %v pending %+v", mods, m.Pending)
	}
	if tmp, _ := filepath.Glob(filepath.Join(out, "*.tmp")); len(tmp) != 0 {
		t.Fatalf("a failed build left %v", tmp)
	}
}
