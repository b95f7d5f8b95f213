package stacktest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// RepoRoot is the module root seen from a package two levels under it (tests/<name>); Build and
// Start find the root themselves (the nearest go.mod), so packages deeper down may use them.
const RepoRoot = "../.."

var (
	buildMu sync.Mutex
	binDir  string
	built   = map[string]bool{}
)

// Build compiles the named commands (function names, or paths such as deploy/local/cmd/lensfn-local)
// once per test binary, as `make build` does (a function's local build where deploy/local runs
// one, local.LocalBuilds), and returns their directory.
func Build(t testing.TB, names ...string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if binDir == "" {
		dir, err := os.MkdirTemp("", "lensfn-e2e-bin-")
		if err != nil {
			t.Fatal(err)
		}
		binDir = dir
	}
	for _, name := range names {
		if built[name] {
			continue
		}
		pkg := name
		if filepath.Base(name) == name {
			pkg = local.CmdPackage(name)
			if localBuild, ok := local.LocalBuilds[pkg]; ok {
				pkg = localBuild // the build the stack runs (the deployer's with the local provider only)
			}
		}
		pkg = "./" + pkg
		cmd := exec.Command("go", "build", "-o", binDir+"/", pkg)
		cmd.Dir = wasmtest.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
		built[name] = true
	}
	return binDir
}

// Main is the TestMain of a package that uses Build: it runs the tests, then removes what Build
// compiled. Each test binary builds its commands into a new temporary directory (hundreds of MB
// with the simulator and the stack), and without this every `go test` run left one behind.
func Main(m *testing.M) {
	code := m.Run()
	RemoveBuilt()
	os.Exit(code)
}

// RemoveBuilt removes the directory Build compiled into, for a TestMain that does more than
// Main; a later Build starts a new one.
func RemoveBuilt() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
		binDir = ""
		clear(built)
	}
}

// Options choose what a test stack runs.
type Options struct {
	Only []string          // the functions to start
	Env  map[string]string // added to every function's environment
	Auth string            // LENS_AUTH ("" is the stack's loopback default, off)
	// DataDir is the stack's data dir (default: a new temporary directory); a test restarting a
	// stack on the same dir passes it again.
	DataDir string
	Log     func(string, ...any) // default: t.Logf
	// Cold returns as soon as the stack serves; otherwise Start also waits until no function
	// is still compiling WASM modules (a first start on a cold cache), so routes that need a
	// module answer at once.
	Cold bool
	// Prometheus starts the stack's Prometheus (when prometheus is on PATH), as make run does.
	Prometheus bool
	// NoModules starts the stack without the built-in WASM modules (not built, not compiled),
	// for stacks whose functions load none (the evaluation side).
	NoModules bool
}

// Start runs a stack for the test (or benchmark) and stops it (dumping the function logs on
// failure) when the test ends.
func Start(t testing.TB, o Options) *local.Stack {
	t.Helper()
	env := map[string]string{"LENS_CACHE_DIR": wasmtest.CacheDir(t)} // compile each module once across stacks
	for k, v := range o.Env {
		env[k] = v
	}
	moduleDir := ""
	if !o.NoModules {
		moduleDir = wasmtest.BuiltinDir(t)
	}
	opts := local.Options{
		ManifestDir: filepath.Join(wasmtest.RepoRoot(t), "deploy", "knative"),
		BinDir:      Build(t, o.Only...),
		ModuleDir:   moduleDir,
		DataDir:     o.DataDir,
		Addr:        "127.0.0.1:0",
		Env:         env,
		Only:        o.Only,
		Auth:        o.Auth,
		Log:         o.Log,

		StartPrometheus: o.Prometheus,
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Log == nil {
		opts.Log = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stack, err := local.Start(ctx, opts)
	if err != nil {
		DumpLogs(t, opts.DataDir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stack.Stop()
		if t.Failed() {
			DumpLogs(t, opts.DataDir)
		}
	})
	if !o.Cold {
		if err := stack.WaitWarm(ctx, nil); err != nil {
			t.Fatalf("the stack's WASM modules did not compile in time: %v (still %v)", err, stack.Warming(context.Background()))
		}
	}
	return stack
}

// DumpLogs logs the tail of every function's log.
func DumpLogs(t testing.TB, dataDir string) {
	logs, _ := filepath.Glob(filepath.Join(dataDir, "logs", "*.log"))
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		tail := string(raw)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		t.Logf("--- %s ---\n%s", filepath.Base(l), tail)
	}
}
