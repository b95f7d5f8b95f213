package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/tests/tracefixture"
)

// needRedisServer skips, saying why, a test that needs a real redis-server process to stop or kill.
func needRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("SKIPPED: redis-server is not installed, and this test needs a real server process to stop and kill")
	}
}

// stackLog collects the stack's own log lines (it also passes them to t.Logf).
type stackLog struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *stackLog) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	l.t.Log(line)
}

func (l *stackLog) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// TestRedisServerIsSupervised: while redis-server does not answer, the API answers 503
// problem+json with Retry-After and readiness fails, logged once; killed, it is restarted by
// the stack (and says so) and the API answers again.
func TestRedisServerIsSupervised(t *testing.T) {
	needRedisServer(t)
	logs := &stackLog{t: t}
	stack := startStack(t, stackOptions{only: []string{"simulation-api"}, log: logs.logf})
	api := stack.APIURL + "/api/simulation"
	fnURL, _ := stack.FunctionURL("simulation-api")
	pid := stack.RedisPID()
	if pid == 0 {
		t.Fatal("no redis-server process")
	}
	if code, body := get(t, api+"/tasks"); code != 200 {
		t.Fatalf("before: %d %s", code, body)
	}

	// A server that stops answering (SIGSTOP): every request times out on the store.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(api + "/tasks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/problem+json" {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		t.Fatalf("API while the store hangs: %d %v", resp.StatusCode, resp.Header)
	}
	code, _ := get(t, fnURL+"/readyz")
	_ = syscall.Kill(pid, syscall.SIGCONT)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("readiness while the store hangs: %d", code)
	}
	eventually(t, 30*time.Second, "the API to answer after SIGCONT", func() bool { code, _ := get(t, api+"/tasks"); return code == 200 })
	raw, _ := os.ReadFile(filepath.Join(stack.DataDir(), "logs", "simulation-api.log"))
	if n := strings.Count(string(raw), "state store unavailable"); n != 1 {
		t.Fatalf("the outage was logged %d times, want once", n)
	}

	// A killed server is restarted on the same address and the API answers again.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "redis-server to be restarted", func() bool {
		next := stack.RedisPID()
		return next != 0 && next != pid
	})
	eventually(t, 30*time.Second, "the API to answer after the restart", func() bool { code, _ := get(t, api+"/tasks"); return code == 200 })
	if !logs.contains("redis-server exited") {
		t.Fatal("the stack did not log redis-server's death")
	}
}

// TestSecondStackOnTheSameDataDirIsRefused: a stack holds its data dir; another one on the same
// dir is refused, naming the holder's pid; once stopped, the dir is free again.
func TestSecondStackOnTheSameDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	first := startStack(t, stackOptions{only: []string{"simulation-api"}, dataDir: dir})
	_, err := local.Start(context.Background(), local.Options{ManifestDir: filepath.Join(repoRoot, "deploy", "knative"),
		BinDir: buildFunctions(t, []string{"simulation-api"}), ModuleDir: wasmtest.BuiltinDir(t), DataDir: dir,
		Addr: "127.0.0.1:0", Only: []string{"simulation-api"}, Log: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "in use by another lensfn-local stack") ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second stack on %s: %v", dir, err)
	}
	if code, _ := get(t, first.APIURL+"/api/simulation/tasks"); code != 200 {
		t.Fatalf("the refused start disturbed the first stack: %d", code)
	}
}

// childrenOf lists the processes whose parent is pid (Linux /proc).
func childrenOf(t *testing.T, pid int) map[int]string {
	t.Helper()
	out := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("SKIPPED: no /proc to find the stack's processes: %v", err)
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
		stat := string(raw)
		open, closing := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(stat[closing+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out[child] = stat[open+1 : closing]
		}
	}
	return out
}

func alive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	closing := strings.LastIndexByte(string(raw), ')')
	fields := strings.Fields(string(raw)[closing+1:])
	return len(fields) > 0 && fields[0] != "Z" // a zombie has died
}

// TestStackLeavesNothingBehind runs lensfn-local as `make run` does: SIGHUP (the terminal
// closed) drains and stops every function and redis-server; SIGKILL of the stack takes
// redis-server and the functions with it (parent-death signal), and frees the data dir.
func TestStackLeavesNothingBehind(t *testing.T) {
	needRedisServer(t)
	manifests, err := local.LoadManifests(filepath.Join(repoRoot, "deploy", "knative"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range manifests.Services {
		names = append(names, svc.Package)
	}
	bin := buildFunctions(t, names)
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "lensfn-local"), "./deploy/local/cmd/lensfn-local")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build lensfn-local: %v\n%s", err, out)
	}
	dataDir := t.TempDir()
	// lensfn-local gives the functions <data>/cache: the modules compiled once for every test.
	if err := os.Symlink(wasmtest.CacheDir(t), filepath.Join(dataDir, "cache")); err != nil {
		t.Fatal(err)
	}
	run := func(sig syscall.Signal) {
		stack := exec.Command(filepath.Join(bin, "lensfn-local"), "--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--data", dataDir, "--bin", bin,
			"--modules", wasmtest.BuiltinDir(t), "--manifests", filepath.Join(repoRoot, "deploy", "knative"))
		stdout, _ := stack.StdoutPipe()
		stack.Stderr = os.Stderr
		if err := stack.Start(); err != nil {
			t.Fatal(err)
		}
		up := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			ok := false
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "Lensfn is up") && !ok {
					ok = true
					up <- true
				}
			}
			if !ok {
				up <- false
			}
		}()
		select {
		case ok := <-up:
			if !ok {
				_ = stack.Wait()
				t.Fatal("the stack exited before it was up")
			}
		case <-time.After(3 * time.Minute):
			_ = stack.Process.Kill()
			t.Fatal("the stack did not come up")
		}
		children := childrenOf(t, stack.Process.Pid)
		redis := 0
		for pid, comm := range children {
			if strings.HasPrefix(comm, "redis-server") {
				redis = pid
			}
		}
		if redis == 0 || len(children) < 2 {
			_ = stack.Process.Kill()
			t.Fatalf("the stack's processes: %v", children)
		}
		if err := stack.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- stack.Wait() }()
		select {
		case err := <-exited:
			if sig == syscall.SIGHUP && err != nil {
				t.Fatalf("after SIGHUP the stack exited with %v, want a clean drain", err)
			}
		case <-time.After(time.Minute):
			_ = stack.Process.Kill()
			t.Fatalf("the stack did not stop on %v", sig)
		}
		eventually(t, 20*time.Second, fmt.Sprintf("every process of the stack to be gone after %v", sig), func() bool {
			for pid := range children {
				if alive(pid) {
					return false
				}
			}
			return true
		})
	}
	run(syscall.SIGHUP)
	run(syscall.SIGKILL) // also proves a dead stack's lock does not block the next start
}

// TestTaskFinishingDuringAStoreOutageCompletes: a replay that ends while redis-server does not
// answer (longer than the runner's lease) is handed to the analyzer once it is back and
// completes with every record analysed, not failed as "runner lost".
func TestTaskFinishingDuringAStoreOutageCompletes(t *testing.T) {
	needRedisServer(t)
	endpoint := startSimulator(t, "--time-to-first-token", "5ms", "--inter-token-latency", "1ms")
	logs := &stackLog{t: t}
	stack := startStack(t, stackOptions{only: []string{"simulation-api", "trace-replayer", "result-analyzer"}, log: logs.logf,
		env: map[string]string{"LENS_LEASE_TTL": "3s", "LENS_SWEEP_INTERVAL": "500ms", "LENS_MAX_CONCURRENT_TASKS": "2"}})
	api := stack.APIURL + "/api/simulation"
	// The generated trace's first minute (about 60 requests) over 3 s.
	want := tracefixture.InWindow(generatedRows, 0, 60000)
	id := createTask(t, api, endpoint, generatedMooncake, `,"trace_start_seconds":0,"trace_end_seconds":60,"scale_factor":20`)
	eventually(t, time.Minute, "the replay to send requests", func() bool {
		_, raw := get(t, api+"/tasks/"+id)
		return strings.Contains(raw, `"sent_requests":`) && !strings.Contains(raw, `"sent_requests":0,`)
	})
	pid := stack.RedisPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * time.Second) // the replay ends, and the lease expires, while the store is out
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	v := waitForStatus(t, api, id, 2*time.Minute, "completed", "failed", "cancelled")
	if v.Status != "completed" {
		t.Fatalf("the task ended %s: %q %v", v.Status, deref(v.ErrorMessage), v.Logs)
	}
	s, _ := resultOf(t, v)
	if s.TotalRequests != want {
		t.Fatalf("%d of %d records analysed", s.TotalRequests, want)
	}
}
