package lensctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/lensctl"
	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

// noParsers: the catalogue without trace parser modules, except that a mooncake_trace file is
// read as one arrival per line, the line's leading number in ms (enough for a timeline).
type noParsers struct{}

func (noParsers) Formats() []simulationapi.TraceFormat {
	return []simulationapi.TraceFormat{{Name: "mooncake_trace", SupportsTraceRange: true, SupportsScaleFactor: true}}
}

func (noParsers) Arrivals(_ context.Context, _, path string, emit func(float64)) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		ms, err := strconv.ParseFloat(strings.Fields(line)[0], 64)
		if err != nil {
			return err
		}
		emit(ms / 1000)
	}
	return nil
}

type stack struct {
	url, token, dataDir string
	repo                *simtask.Repo
}

// newStack serves the real simulation-api with auth required and returns a token for it.
func newStack(t *testing.T) *stack {
	t.Helper()
	dataDir := t.TempDir()
	cfg := fntest.Config(t, fntest.Env(t, map[string]string{"LENS_DATA_DIR": dataDir, "LENS_AUTH": "required"}))
	s, err := fn.NewServer(context.Background(), cfg, simulationapi.Name, func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		f, _, err := simulationapi.New(d, noParsers{})
		return f, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	return &stack{url: srv.URL, token: fntest.Token(t, s), dataDir: dataDir,
		repo: &simtask.Repo{Store: s.Deps.Store, DataDir: dataDir}}
}

// seed stores a queued task directly (creating one through the API would probe an endpoint).
func (st *stack) seed(t *testing.T, name string) string {
	t.Helper()
	id := simtask.NewID()
	task := &simtask.Task{ID: id, Name: name, Scenario: "chat", Status: simtask.StatusQueued, ModelName: "Qwen/Qwen3-8B",
		EndpointMode: "external", EndpointURL: "http://127.0.0.1:1/v1", TaskDir: st.repo.TaskDir(id), CreatedAt: simtask.Now(), Logs: []string{}}
	if err := st.repo.Create(context.Background(), task, ""); err != nil {
		t.Fatal(err)
	}
	return id
}

// finish moves a task through running to status, with a summary and records when completed.
func (st *stack) finish(t *testing.T, id, status string) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.repo.Transition(ctx, id, []string{simtask.StatusQueued}, simtask.StatusRunning, state.Fence{}, func(tk *simtask.Task) error {
		tk.ProgressPercent, tk.ProgressMessage = 50, "Simulation running: 1 of 2 requests sent"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st.repo.Logf(ctx, id, "replaying")
	dir := st.repo.TaskDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "per-request.jsonl")
	rec := `{"request_id":1,"status_code":200,"successful":true,"scheduled_at_seconds":0,"started_at_seconds":0,"completed_at_seconds":0.3,"latency_ms":300,"ttft_ms":40,"input_tokens":5,"output_tokens":9}` + "\n"
	if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.repo.Transition(ctx, id, []string{simtask.StatusRunning}, status, state.Fence{}, func(tk *simtask.Task) error {
		tk.ProgressPercent, tk.CompletedAt, tk.Internal.RecordsPath = 100, simtask.Now(), path
		tk.Result = &simtask.Result{Summary: json.RawMessage(`{"total_requests":1,"successful_requests":1,"success_rate":100,
			"latency":{"count":1,"mean_ms":300,"p50_ms":300,"p90_ms":300,"p95_ms":300,"p99_ms":300,"min_ms":300,"max_ms":300}}`), Warnings: []string{}}
		if status == simtask.StatusFailed {
			msg := "the endpoint stopped answering"
			tk.ErrorMessage = &msg
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// run drives lensctl's root command as the binary's main does, with env as the environment.
func (st *stack) run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string { return env[k] }
	if env == nil {
		getenv = func(k string) string {
			return map[string]string{"LENS_API": st.url, "LENS_TOKEN": st.token, "HOME": t.TempDir()}[k]
		}
	}
	code := lensctl.Main(append([]string{"--no-progress"}, args...), strings.NewReader(""), &out, &errOut, getenv)
	r := result{code, out.String(), errOut.String()}
	if st.token != "" && (strings.Contains(r.stdout, st.token) || strings.Contains(r.stderr, st.token)) {
		t.Fatalf("lensctl %v printed the token", args)
	}
	return r
}

func TestListAndGetInEveryFormat(t *testing.T) {
	st := newStack(t)
	id := st.seed(t, "nightly chat replay")
	r := st.run(t, nil, "tasks", "list")
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "nightly chat replay") || !strings.Contains(r.stdout, "queued") {
		t.Fatalf("%+v", r)
	}
	r = st.run(t, nil, "tasks", "list", "-o", "json")
	var listing struct {
		Tasks []simtask.Task `json:"tasks"`
		Total int            `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listing); err != nil || r.code != 0 || listing.Total != 1 || listing.Tasks[0].ID != id {
		t.Fatalf("%+v %v", r, err)
	}
	r = st.run(t, nil, "tasks", "get", id, "--output", "yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "id: \""+id+"\"") && !strings.Contains(r.stdout, "id: "+id) || !strings.Contains(r.stdout, "status: queued") {
		t.Fatalf("%+v", r)
	}
	st.finish(t, id, simtask.StatusCompleted)
	r = st.run(t, nil, "tasks", "get", id)
	if r.code != 0 || !strings.Contains(r.stdout, "completed") || !strings.Contains(r.stdout, "latency p50/p99 ms") {
		t.Fatalf("%+v", r)
	}
}

func TestProblemsAndUsageErrorsHaveTheirExitCodes(t *testing.T) {
	st := newStack(t)
	r := st.run(t, nil, "tasks", "get", "deadbeef")
	if r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "404") || !strings.Contains(r.stderr, `no simulation task "deadbeef"`) {
		t.Fatalf("%+v", r)
	}
	for name, argv := range map[string][]string{
		"missing argument": {"tasks", "get"},
		"bad output":       {"tasks", "list", "-o", "xml"},
		"unknown flag":     {"tasks", "list", "--bogus"},
		"no subcommand":    {"tasks"},
		"create no file":   {"tasks", "create"},
	} {
		if r := st.run(t, nil, argv...); r.code != lensctl.ExitUsage || !strings.Contains(r.stderr, "usage error") {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// A 422 from the API lists the fields it refused.
	body := filepath.Join(t.TempDir(), "task.json")
	_ = os.WriteFile(body, []byte(`{"scenario":"chat","bogus":1}`), 0o644)
	if r := st.run(t, nil, "tasks", "create", "-f", body); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "422") {
		t.Fatalf("%+v", r)
	}
	// Without a token the API answers 401, printed as such.
	env := map[string]string{"LENS_API": st.url, "HOME": t.TempDir()}
	if r := st.run(t, env, "tasks", "list"); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "401") {
		t.Fatalf("%+v", r)
	}
	// A wrong token is refused and not echoed.
	if r := st.run(t, env, "--token", "lens_wrong_token_123456", "tasks", "list"); r.code != lensctl.ExitFailed ||
		strings.Contains(r.stderr+r.stdout, "lens_wrong_token_123456") {
		t.Fatalf("%+v", r)
	}
}

func TestConfigFileAndFlagPrecedence(t *testing.T) {
	st := newStack(t)
	id := st.seed(t, "from the config file")
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "lensfn")
	_ = os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("api: "+st.url+"\ntoken: "+st.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := st.run(t, map[string]string{"HOME": home}, "tasks", "list"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Fatalf("config file: %+v", r)
	}
	// The flag beats the environment, which beats the file.
	env := map[string]string{"HOME": home, "LENS_API": "http://127.0.0.1:1"}
	if r := st.run(t, env, "tasks", "list"); r.code != lensctl.ExitFailed {
		t.Fatalf("env should win over the file: %+v", r)
	}
	if r := st.run(t, env, "--api", st.url, "tasks", "list"); r.code != 0 {
		t.Fatalf("flag should win over env: %+v", r)
	}
}

func TestWatchExitsByOutcome(t *testing.T) {
	st := newStack(t)
	for status, want := range map[string]int{simtask.StatusCompleted: lensctl.ExitOK, simtask.StatusFailed: lensctl.ExitFailed,
		simtask.StatusCancelled: lensctl.ExitCancelled} {
		id := st.seed(t, "watch "+status)
		done := make(chan result, 1)
		go func() { done <- st.run(t, nil, "tasks", "watch", id) }()
		time.Sleep(50 * time.Millisecond) // the watch may connect before or after: both must work
		st.finish(t, id, status)
		select {
		case r := <-done:
			if r.code != want || !strings.Contains(r.stderr, "replaying") || !strings.Contains(r.stdout, status) {
				t.Errorf("%s: %+v", status, r)
			}
			// A finished watch ends with the result's numbers, not only the status.
			if status == simtask.StatusCompleted && (!strings.Contains(r.stdout, "latency p50/p99 ms") || !strings.Contains(r.stdout, "300 / 300") ||
				!strings.Contains(r.stdout, "total_requests")) {
				t.Errorf("the finished watch shows no result: %+v", r)
			}
			if status == simtask.StatusFailed && !strings.Contains(r.stderr, "the endpoint stopped answering") {
				t.Errorf("failed watch does not say why: %+v", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: watch did not end", status)
		}
	}
}

func TestReportStopRerunDelete(t *testing.T) {
	st := newStack(t)
	id := st.seed(t, "report me")
	st.finish(t, id, simtask.StatusCompleted)
	file := filepath.Join(t.TempDir(), "r.html")
	if r := st.run(t, nil, "tasks", "report", id, "--file", file); r.code != 0 || !strings.Contains(r.stdout, file) {
		t.Fatalf("%+v", r)
	}
	html, _ := os.ReadFile(file)
	if !strings.Contains(string(html), "<svg") || !strings.Contains(string(html), "report me") {
		t.Fatalf("report %.300s", html)
	}
	csvFile := filepath.Join(t.TempDir(), "r.csv")
	if r := st.run(t, nil, "tasks", "report", id, "--kind", "per-request-csv", "--file", csvFile); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if raw, _ := os.ReadFile(csvFile); !strings.HasPrefix(string(raw), "request_id,") {
		t.Fatalf("csv %s", raw)
	}
	if r := st.run(t, nil, "tasks", "report", id, "--kind", "nope"); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "404") {
		t.Fatalf("%+v", r)
	}

	q := st.seed(t, "stop me")
	if r := st.run(t, nil, "tasks", "stop", q); r.code != 0 || !strings.Contains(r.stdout, "cancelling") {
		t.Fatalf("%+v", r)
	}
	if r := st.run(t, nil, "tasks", "delete", q); r.code != 0 || !strings.Contains(r.stdout, "deleted") {
		t.Fatalf("%+v", r)
	}
	if r := st.run(t, nil, "tasks", "get", q); r.code != lensctl.ExitFailed {
		t.Fatalf("deleted task still there: %+v", r)
	}
	// Rerun probes the endpoint, which does not answer here: the API's 400 is shown.
	if r := st.run(t, nil, "tasks", "rerun", id); r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "400") {
		t.Fatalf("%+v", r)
	}
}

func TestDatasetsList(t *testing.T) {
	st := newStack(t)
	r := st.run(t, nil, "datasets", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "mooncake-conversation") || !strings.Contains(r.stdout, "NAME") {
		t.Fatalf("%+v", r)
	}
	r = st.run(t, nil, "datasets", "timeline", "mooncake-conversation")
	if r.code != lensctl.ExitFailed || !strings.Contains(r.stderr, "409") {
		t.Fatalf("timeline of a dataset not downloaded: %+v", r)
	}
}
