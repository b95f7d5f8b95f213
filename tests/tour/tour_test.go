package tour_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/tests/tracefixture"
)

const repoRoot = "../.."

// The addresses the README's tour is written for: make run's defaults.
const (
	readmeAPI = "http://127.0.0.1:8080"
	readmeSim = "http://127.0.0.1:8000/v1"
)

// tourBlock is the first ```sh block under the heading, verbatim.
func tourBlock(t *testing.T, heading string) string {
	return tourBlocks(t, heading)[0]
}

// tourBlocks are the ```sh blocks of the heading's section, verbatim.
func tourBlocks(t *testing.T, heading string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	at := strings.Index(text, "\n"+heading+"\n")
	if at < 0 {
		t.Fatalf("README.md has no %q section", heading)
	}
	text = text[at+len(heading)+2:]
	if next := strings.Index(text, "\n## "); next >= 0 {
		text = text[:next]
	}
	var blocks []string
	for {
		start := strings.Index(text, "\n```sh\n")
		if start < 0 {
			break
		}
		text = text[start+len("\n```sh\n"):]
		end := strings.Index(text, "\n```\n")
		if end < 0 {
			t.Fatal("unterminated ```sh block")
		}
		blocks = append(blocks, text[:end+1])
		text = text[end:]
	}
	if len(blocks) == 0 {
		t.Fatalf("no ```sh block under %q", heading)
	}
	return blocks
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; .ci/run installs it", tool)
			}
			t.Skipf("%s is not installed: the README's tour needs it", tool)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The binaries are built once per test binary and shared by the tours (each starts its own
// stack on a fresh data dir), so a second tour costs no second link of every command.
var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// build compiles what `make build` does (every function's cmd, the local build in place of an
// image cmd the stack replaces with one, and lensfn-local) into a temp dir, once.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() { builtDir, buildErr = buildAll() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtDir
}

func buildAll() (string, error) {
	dir, err := os.MkdirTemp("", "lensfn-tour-bin-")
	if err != nil {
		return "", err
	}
	cmds, _ := filepath.Glob(filepath.Join(repoRoot, "functions", "*", "cmd", "*"))
	args := []string{"build", "-o", dir + "/"}
	for _, c := range cmds {
		rel, _ := filepath.Rel(repoRoot, c)
		if _, replaced := local.LocalBuilds[filepath.ToSlash(rel)]; replaced {
			continue
		}
		args = append(args, "./"+rel)
	}
	args = append(args, "./deploy/local/cmd/lensfn-local")
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return dir, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir, nil
}

// stack is a running bin/lensfn-local, started as `make run` starts it.
type stack struct {
	cmd              *exec.Cmd
	api, sim, model  string
	dataDir, logPath string
}

var upLine = regexp.MustCompile(`(?m)^  API:\s+(http://\S+)/api/simulation\s`)
var simLine = regexp.MustCompile(`(?m)^  Simulator: endpoint_url (http://\S+/v1)\s+model_name (\S+)$`)

func startStack(t *testing.T, bin, modules, dataDir, addr, simAddr, mirror string) *stack {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "lensfn-local"), "-bin", bin, "-modules", modules,
		"-manifests", filepath.Join(repoRoot, "deploy", "knative"), "-data", dataDir)
	cmd.Env = append(os.Environ(), "LENS_ADDR="+addr, "LENS_SIM_ADDR="+simAddr, "LENS_DATASET_MIRROR="+mirror, "LENS_AUTH=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logPath := filepath.Join(t.TempDir(), "lensfn-local.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &stack{cmd: cmd, dataDir: dataDir, logPath: logPath}
	t.Cleanup(func() { s.stop(t) })
	printed := make(chan string, 1)
	go func() {
		var buf strings.Builder
		sc := bufio.NewScanner(out)
		compiling := false
		for sc.Scan() {
			buf.WriteString(sc.Text() + "\n")
			// On a first start the README says to wait for the modules (make run prints a
			// Modules line, then "WASM modules ready"), and so does the tour.
			if strings.HasPrefix(sc.Text(), "  Modules:") {
				compiling = true
			}
			if strings.HasPrefix(sc.Text(), "WASM modules ready") || (!compiling && strings.HasPrefix(sc.Text(), "Ctrl-C")) {
				printed <- buf.String()
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		printed <- buf.String()
	}()
	var text string
	select {
	case text = <-printed:
	case <-time.After(4 * time.Minute):
		t.Fatalf("lensfn-local did not come up in 4 minutes; its log:\n%s", s.log())
	}
	api, sim := upLine.FindStringSubmatch(text), simLine.FindStringSubmatch(text)
	if api == nil || sim == nil {
		t.Fatalf("lensfn-local did not print the API and Simulator lines the README's tour uses:\n%s\nlog:\n%s", text, s.log())
	}
	s.api, s.sim, s.model = api[1], sim[1], sim[2]
	if s.api != "http://"+addr || s.sim != "http://"+simAddr+"/v1" {
		t.Fatalf("printed %s and %s, started on %s and %s", s.api, s.sim, addr, simAddr)
	}
	return s
}

func (s *stack) log() string {
	raw, _ := os.ReadFile(s.logPath)
	return string(raw)
}

// stop is Ctrl-C: SIGINT, then a wait for the drain.
func (s *stack) stop(t *testing.T) {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Errorf("lensfn-local did not drain within 60 s")
	}
}

// runTour runs a README block in bash in dir, with the README's addresses replaced by the
// stack's, failing on the first command that fails (curl fails on an HTTP error).
func runTour(t *testing.T, s *stack, block, dir string) string {
	t.Helper()
	script := strings.NewReplacer(readmeSim, s.sim, readmeAPI, s.api).Replace(block)
	prelude := "set -euo pipefail\ncurl() { command curl --fail-with-body --max-time 60 \"$@\"; }\n"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+script)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's tour failed: %v\n--- script ---\n%s\n--- stdout ---\n%s\n--- stderr ---\n%s\n--- lensfn-local ---\n%s",
			err, script, stdout.String(), stderr.String(), s.log())
	}
	return stdout.String()
}

// jsonValues decodes the JSON documents a tour printed, in order.
func jsonValues(t *testing.T, out string) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var docs []map[string]any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("the tour printed something that is not JSON (%v):\n%s", err, out)
		}
		if m, ok := v.(map[string]any); ok {
			docs = append(docs, m)
		}
	}
}

func find(docs []map[string]any, key string) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		if _, ok := d[key]; ok {
			out = append(out, d)
		}
	}
	return out
}

// TestTheReadmeTour runs the README's "The simulation tour" block literally (only the two addresses
// replaced by free ones) against bin/lensfn-local started as `make run` starts it, with a
// dataset mirror that refuses every connection (nothing may need the internet), and checks
// what each step printed; then restarts the stack and reruns the task against the simulator,
// which is back on its fixed address.
func TestTheReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every function and runs the whole stack")
	}
	need(t, "bash", "curl", "jq")
	block := tourBlock(t, "## The simulation tour")
	for _, literal := range []string{"API=" + readmeAPI + "/api/simulation", "SIM=" + readmeSim, `model_name: "fake-model"`} {
		if !strings.Contains(block, literal) {
			t.Fatalf("the tour no longer says %s", literal)
		}
	}
	bin := build(t)
	modules := wasmtest.BuiltinDir(t)
	dataDir := t.TempDir()
	// Compile each module once across test runs, as sec-store's e2e does.
	if err := os.Symlink(wasmtest.CacheDir(t), filepath.Join(dataDir, "cache")); err != nil {
		t.Fatal(err)
	}
	closed := freeAddr(t) // nothing listens there: a download attempt fails at once, locally
	addr, simAddr := freeAddr(t), freeAddr(t)
	s := startStack(t, bin, modules, dataDir, addr, simAddr, "http://"+closed)
	if s.model != "fake-model" {
		t.Fatalf("the simulator serves %s; the tour uses fake-model", s.model)
	}

	work := t.TempDir()
	docs := jsonValues(t, runTour(t, s, block, work))

	backends := find(docs, "formats")
	if len(backends) != 2 {
		t.Fatalf("backends: %v", backends)
	}
	var sample map[string]any
	for _, d := range find(docs, "downloaded") {
		if d["name"] == "lensfn-sample-chat" {
			sample = d
		}
	}
	if sample == nil || sample["downloaded"] != true || sample["trace_format"] != "mooncake_trace" {
		t.Fatalf("the sample is not listed as downloaded: %v", sample)
	}
	timelines := find(docs, "request_count")
	if len(timelines) != 1 {
		t.Fatalf("timeline: %v", timelines)
	}
	requests := timelines[0]["request_count"].(float64)
	if requests < 50 || timelines[0]["duration_seconds"].(float64) < 30 {
		t.Fatalf("timeline %v", timelines[0])
	}
	models := find(docs, "models")
	if len(models) != 1 || fmt.Sprint(models[0]["models"]) != "[fake-model]" {
		t.Fatalf("discover: %v", models)
	}
	results := find(docs, "summary")
	if len(results) != 1 {
		t.Fatalf("no result printed: %v", docs)
	}
	res := results[0]
	summary, _ := res["summary"].(map[string]any)
	if res["status"] != "completed" || fmt.Sprint(res["warnings"]) != "[]" || summary == nil ||
		summary["total_requests"].(float64) != requests || summary["success_rate"].(float64) != 100 ||
		summary["ttft"] == nil || summary["measured_duration_seconds"].(float64) <= 0 {
		t.Fatalf("result %v", res)
	}
	records := find(docs, "request_id")
	if len(records) != 2 {
		t.Fatalf("the tour's last step printed %d records", len(records))
	}
	id := taskID(t, s)
	raw, err := os.ReadFile(filepath.Join(work, id+"-per-request.jsonl"))
	if err != nil || float64(bytes.Count(raw, []byte("\n"))) != requests {
		t.Fatalf("the per-request artifact: %v, %d lines", err, bytes.Count(raw, []byte("\n")))
	}

	// After a restart the simulator is where the task points, so a rerun (which probes the
	// endpoint's /v1/models before it is saved) is accepted. The restarted stack reads datasets
	// from a loopback mirror laid out as the README says (a folder of trace files).
	s.stop(t)
	mirror := "http://" + closed
	tracesDir, tracesErr := tracefixture.TracesDir(repoRoot) // LENS_SHARED_DIR, default ../shared
	haveTraces := tracesErr == nil
	if haveTraces {
		srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(tracesDir, "mooncake"))))
		defer srv.Close()
		mirror = srv.URL
	}
	s = startStack(t, bin, modules, dataDir, addr, simAddr, mirror)
	resp, err := http.Post(s.api+"/api/simulation/tasks/"+id+"/rerun", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// With redis-server the store outlives the stack; without it the stack falls back to the
	// embedded store, whose data ends with the process (it says so at start), so the task is gone.
	want := http.StatusAccepted
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("CI") == "" {
		want = http.StatusNotFound
	}
	if resp.StatusCode != want {
		t.Fatalf("rerun after a restart: %d (want %d) %s\n--- lensfn-local ---\n%s", resp.StatusCode, want, body, s.log())
	}

	// The README's second step, the real traces, through the mirror.
	blocks := tourBlocks(t, "## The simulation tour")
	if len(blocks) < 2 || !strings.Contains(blocks[1], "trace-datasets/download") {
		t.Fatalf("the tour's second block is not the download: %q", blocks)
	}
	if !haveTraces {
		t.Logf("the real traces are absent (%v): the download step is not run", tracesErr)
		return
	}
	docs = jsonValues(t, runTour(t, s, "SIM="+readmeSim+"\nAPI="+readmeAPI+"/api/simulation\n"+blocks[1], work))
	downloads := find(docs, "transferred")
	if len(downloads) != 1 || downloads[0]["transferred"] != true || downloads[0]["source"] != "mirror" {
		t.Fatalf("download: %v", downloads)
	}
	if tl := find(docs, "request_count"); len(tl) != 1 || tl[0]["request_count"].(float64) != 12031 {
		t.Fatalf("timeline: %v", tl)
	}
}

// taskID is the newest task's id.
func taskID(t *testing.T, s *stack) string {
	t.Helper()
	resp, err := http.Get(s.api + "/api/simulation/tasks?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Tasks) != 1 {
		t.Fatalf("task list: %v %+v", err, list)
	}
	return list.Tasks[0].ID
}
