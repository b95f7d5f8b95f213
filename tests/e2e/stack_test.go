package e2e_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

const repoRoot = "../.."

var (
	buildMu sync.Mutex
	binDir  string
	built   = map[string]bool{}
)

// buildFunctions compiles the named functions' commands (once per test binary), as `make build`
// does for all of them.
func buildFunctions(t *testing.T, names []string) string {
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
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./functions/"+name+"/cmd/"+name)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
		built[name] = true
	}
	return binDir
}

type stackOptions struct {
	only    []string
	env     map[string]string
	dataDir string               // default: a new temporary directory
	log     func(string, ...any) // default: t.Logf
}

func startStack(t *testing.T, o stackOptions) *local.Stack {
	t.Helper()
	env := map[string]string{"LENS_CACHE_DIR": wasmtest.CacheDir(t)} // compile each module once across stacks
	for k, v := range o.env {
		env[k] = v
	}
	opts := local.Options{
		ManifestDir: filepath.Join(repoRoot, "deploy", "knative"),
		BinDir:      buildFunctions(t, o.only),
		ModuleDir:   wasmtest.BuiltinDir(t),
		DataDir:     o.dataDir,
		Addr:        "127.0.0.1:0",
		Env:         env,
		Only:        o.only,
		Log:         o.log,
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
		dumpLogs(t, opts.DataDir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stack.Stop()
		if t.Failed() {
			dumpLogs(t, opts.DataDir)
		}
	})
	return stack
}

func dumpLogs(t *testing.T, dataDir string) {
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

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func post(t *testing.T, url, contentType, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// metric returns the value of the first exposition line starting with series ("" if absent).
func metric(t *testing.T, baseURL, series string) string {
	t.Helper()
	_, body := get(t, baseURL+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimPrefix(line, series+" ")
		}
	}
	return ""
}
