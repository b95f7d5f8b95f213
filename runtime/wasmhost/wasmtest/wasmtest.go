package wasmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from the working directory.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("wasmtest: no go.mod above the working directory")
		}
		dir = parent
	}
}

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// BuiltinDir returns a directory with every built-in module and its manifest.
func BuiltinDir(tb testing.TB) string {
	return build(tb, false)
}

// ExampleDir returns the directory of the example user modules (with their manifest).
// It needs wat2wasm (Debian's wabt); without it the test is skipped with that reason.
func ExampleDir(tb testing.TB) string {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		tb.Skip("wat2wasm not found: install Debian's wabt to build the example user module")
	}
	return filepath.Join(build(tb, true), "examples")
}

// UserCopy copies the built-in module name into a fresh directory, as file, with a manifest
// pinning it under its own name and kind: a user module (LENS_MODULE_DIR, or loaded by path).
// It returns the copy's path.
func UserCopy(tb testing.TB, name, file string) string {
	tb.Helper()
	builtin := BuiltinDir(tb)
	b, err := os.ReadFile(filepath.Join(builtin, "manifest.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var man struct {
		Modules []struct{ File, SHA256, Kind, Name string }
	}
	if err := json.Unmarshal(b, &man); err != nil {
		tb.Fatal(err)
	}
	for _, e := range man.Modules {
		if e.Name != name {
			continue
		}
		bin, err := os.ReadFile(filepath.Join(builtin, e.File))
		if err != nil {
			tb.Fatal(err)
		}
		dir := tb.TempDir()
		entry, _ := json.Marshal(map[string]string{"file": file, "sha256": e.SHA256, "kind": e.Kind, "name": e.Name})
		if err := os.WriteFile(filepath.Join(dir, file), bin, 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"manifest_version":1,"modules":[`+string(entry)+`]}`), 0o644); err != nil {
			tb.Fatal(err)
		}
		return filepath.Join(dir, file)
	}
	tb.Fatalf("wasmtest: no built-in module %q", name)
	return ""
}

// CacheDir returns a compilation cache directory shared by test runs.
func CacheDir(tb testing.TB) string {
	tb.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		return tb.TempDir()
	}
	return filepath.Join(base, "lensfn", "wazero-cache")
}

func build(tb testing.TB, examples bool) string {
	tb.Helper()
	root := RepoRoot(tb)
	key, err := sourceHash(root)
	if err != nil {
		tb.Fatalf("wasmtest: hashing sources: %v", err)
	}
	if examples {
		key += "-examples"
	}
	mu.Lock()
	defer mu.Unlock()
	if dir, ok := built[key]; ok {
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "lensfn", "wasmtest", key)
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
		built[key] = dir
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), key+".tmp-")
	if err != nil {
		tb.Fatal(err)
	}
	args := []string{filepath.Join(root, "wasm-modules", "build.sh"), tmp}
	if !examples {
		args = append(args, "--no-examples")
	}
	cmd := exec.Command("bash", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		tb.Fatalf("wasmtest: build.sh failed: %v\n%s", err, out)
	}
	// Another test process may have finished first; either result is the same build.
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(dir, "manifest.json")); serr != nil {
			tb.Fatalf("wasmtest: %v", err)
		}
	}
	built[key] = dir
	return dir
}

func sourceHash(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "wasm-modules"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// What goes into a module: Go sources, WebAssembly text and the build script
		// (not tests, docs or test data, so editing those does not force a rebuild).
		if d.Type().IsRegular() && !strings.HasSuffix(p, "_test.go") && !strings.Contains(p, string(filepath.Separator)+"testdata"+string(filepath.Separator)) &&
			(strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".wat") || strings.HasSuffix(p, ".sh")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	files = append(files, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}
