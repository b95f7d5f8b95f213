package benchmarkrunner_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// fakeModel streams completions (and chat completions) with a fixed time to first token and
// inter-token latency, and remembers each prompt.
type fakeModel struct {
	ttft, itl time.Duration
	noMetrics bool // no /metrics: monitoring never gets ready
	// echo makes token k of the request with X-Request-ID id read " <id>:<k>", so every reply
	// is distinct text (echoReply); byID then keeps each request's prompt or messages.
	echo      bool
	failWith  int // a status every completion answers with (0: none)
	mu        sync.Mutex
	generated int
	prompts   []string
	byID      map[string]seenTurn
	inFlight  int
	peak      int
}

// seenTurn is what one request sent: a completions prompt or chat messages.
type seenTurn struct {
	Prompt   string        `json:"prompt"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// echoReply is the whole reply the echoing fake gives the request with X-Request-ID id.
func echoReply(id string, tokens int) string {
	var b strings.Builder
	for k := range tokens {
		fmt.Fprintf(&b, " %s:%d", id, k)
	}
	return b.String()
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
		return
	}
	if r.URL.Path == "/metrics" {
		if f.noMetrics {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fake-model\"} %d\n"+
			"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"fake-model\"} %d\n", f.inFlight, f.generated)
		return
	}
	if f.failWith != 0 {
		http.Error(w, "the fake model is overloaded", f.failWith)
		return
	}
	var body struct {
		seenTurn
		MaxTokens int `json:"max_tokens"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	id := r.Header.Get("X-Request-ID")
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	f.mu.Lock()
	f.prompts = append(f.prompts, body.Prompt)
	if f.echo {
		if f.byID == nil {
			f.byID = map[string]seenTurn{}
		}
		f.byID[id] = body.seenTurn
	}
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for k := range body.MaxTokens {
		d := f.itl
		if k == 0 {
			d = f.ttft
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		token := " tok"
		if f.echo {
			token = fmt.Sprintf(" %s:%d", id, k)
		}
		if chat {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", token)
		} else {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":null}]}\n\n", token)
		}
		fl.Flush()
	}
	f.mu.Lock()
	f.generated += body.MaxTokens
	f.mu.Unlock()
	prompt := len(strings.Fields(body.Prompt))
	for _, m := range body.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", prompt, body.MaxTokens)
	fl.Flush()
}

type harness struct {
	deps   fn.Deps
	runs   *evalrun.Repo
	runner *benchmarkrunner.Runner
	model  *fakeModel
	url    string
}

func start(t *testing.T, model *fakeModel, settings benchmarkrunner.Settings) *harness {
	t.Helper()
	return startWith(t, model, settings, nil)
}

func startWith(t *testing.T, model *fakeModel, settings benchmarkrunner.Settings, env map[string]string) *harness {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	key := secret.NewKey()
	extra := map[string]string{"LENS_SECRET_KEY": key}
	for k, v := range env {
		extra[k] = v
	}
	deps := fntest.Deps(t, benchmarkrunner.Name, fntest.Env(t, extra))
	// The Prometheus settings come from the environment, as in the function.
	read, err := benchmarkrunner.ReadSettings(deps.Config)
	if err != nil {
		t.Fatal(err)
	}
	settings.PrometheusURL, settings.PrometheusTargetsDir = read.PrometheusURL, read.PrometheusTargetsDir
	sealer, _ := secret.FromEnv(key)
	h := &harness{deps: deps, model: model, url: srv.URL + "/v1",
		runs: &evalrun.Repo{Store: deps.Store, Sealer: sealer, DataDir: deps.Config.DataDir}}
	h.runner = benchmarkrunner.NewRunner(deps, settings, h.runs)
	ctx, stop := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() { defer close(swept); h.runner.Sweep(ctx) }()
	t.Cleanup(func() { stop(); <-swept; _ = h.runner.Close(context.Background()) })
	return h
}

func fast() benchmarkrunner.Settings {
	// The lease outlives any renewal a busy CI host can delay (a 900 ms lease renewed every 300 ms
	// expired under compile load and the sweep reaped a live run); lost-runner tests hold no lease.
	return benchmarkrunner.Settings{MaxConcurrent: 2, LeaseTTL: 5 * time.Second, SweepInterval: 50 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, ReportInterval: 100 * time.Millisecond, ScrapeInterval: 50 * time.Millisecond}
}

func (h *harness) create(t *testing.T, body string) string {
	t.Helper()
	return h.createAgainst(t, h.url, "sk-test", body)
}

func (h *harness) waitFor(t *testing.T, id string, timeout time.Duration, cond func(*evalrun.Run) bool) *evalrun.Run {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		run, err := h.runs.Get(context.Background(), id)
		if err == nil && cond(run) {
			return run
		}
		if time.Now().After(deadline) {
			doc, _ := json.Marshal(run)
			t.Fatalf("run did not get there in %s: %s", timeout, doc)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cancel asks for a cancel as evaluation-api does: the running run becomes cancelling.
func (h *harness) cancel(t *testing.T, id string) {
	t.Helper()
	if _, err := h.runs.Transition(context.Background(), id, []string{evalrun.StatusRunning}, evalrun.StatusCancelling, state.Fence{}, func(r *evalrun.Run) error {
		r.Internal.CancelRequested = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func terminal(run *evalrun.Run) bool { return evalrun.Terminal(run.Status) }

func doc(t *testing.T, run *evalrun.Run) map[string]any {
	raw, _ := json.Marshal(run)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMatrixRunWithTwoStagesAndAnSLA(t *testing.T) {
	h := start(t, &fakeModel{ttft: 30 * time.Millisecond, itl: 4 * time.Millisecond}, fast())
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":32,"osl":8}],
		"concurrency_stages":[{"concurrency":2,"num_requests":6},{"concurrency":4,"num_requests":12}],"warmup_requests":3,
		"sla_targets":{"ttft_ms":1000,"tpot_ms":500,"success_rate_min_percent":99}}`)
	run := h.waitFor(t, id, 30*time.Second, terminal)
	m := doc(t, run)
	if m["status"] != "succeeded" || m["error"] != nil {
		t.Fatalf("status %v error %v", m["status"], m["error"])
	}
	metrics := m["metrics"].(map[string]any)
	if metrics["request_count"] != 18.0 || metrics["success_count"] != 18.0 || metrics["success_rate"] != 100.0 {
		t.Fatalf("metrics counts %v %v %v", metrics["request_count"], metrics["success_count"], metrics["success_rate"])
	}
	ttft, tpot := metrics["ttft_ms"].(float64), metrics["tpot_ms"].(float64)
	if ttft < 30 || ttft > 30+150*slack || tpot < 3.5 || tpot > 4+40*slack {
		t.Fatalf("ttft %.1f ms (want ~30), tpot %.1f ms (want ~4)", ttft, tpot)
	}
	if itl := metrics["itl_ms"]; itl == nil {
		t.Fatal("no ITL")
	}
	points := m["matrix_results"].([]any)
	point := points[0].(map[string]any)
	stages := point["stage_metrics"].([]any)
	if len(points) != 1 || point["status"] != "succeeded" || len(stages) != 2 {
		t.Fatalf("matrix_results %v", points)
	}
	for i, want := range []float64{6, 12} {
		s := stages[i].(map[string]any)
		if s["metrics"].(map[string]any)["request_count"] != want || s["num_requests"] != want {
			t.Fatalf("stage %d: %v", i, s)
		}
	}
	warm := m["warmup"].(map[string]any)
	if warm["num_requests"] != 3.0 || warm["status"] != "succeeded" {
		t.Fatalf("warmup %v", warm)
	}
	sla := m["sla"].(map[string]any)
	if sla["met"] != true || len(sla["checks"].(map[string]any)) != 3 {
		t.Fatalf("sla %v", sla)
	}
	if m["phase"] != "matrix-0" || m["benchmark_started_at"] == nil || m["phase_started_at"] == nil || m["finished_at"] == nil || m["heartbeat_at"] == nil {
		t.Fatalf("phase fields: %v %v %v %v", m["phase"], m["benchmark_started_at"], m["phase_started_at"], m["finished_at"])
	}
	if run := m["metrics"].(map[string]any); run["running_requests"] == nil || run["prefix_cache_hit_rate"] != nil {
		t.Fatalf("evidence: running %v, prefix hit rate %v (the fake has no prefix counters: unavailable, not 0)",
			run["running_requests"], run["prefix_cache_hit_rate"])
	}
	obs := metrics["observability"].(map[string]any)
	if obs["flow_status"] != "available" || obs["series"].(map[string]any)["vllm:prefix_cache_hits_total"] != "unavailable" ||
		m["monitoring"].(map[string]any)["status"] != "available" {
		t.Fatalf("observability %v, monitoring %v", obs, m["monitoring"])
	}
	if h.model.peak > 4 {
		t.Fatalf("peak in flight %d > concurrency 4", h.model.peak)
	}
	// Artifacts are named by their API address, never by the runner's file.
	if raw, _ := json.Marshal(m); strings.Contains(string(raw), h.runs.RunDir(id)) || strings.Contains(string(raw), h.runs.DataDir) {
		t.Fatalf("the run's answer names a server path: %s", raw)
	}
	if g := metrics["request_slo_goodput"].(map[string]any); g["artifact_path"] != "/api/v1/evaluate/runs/"+id+"/artifacts/per-request-jsonl" {
		t.Fatalf("goodput artifact_path %v", g["artifact_path"])
	}
	// 3 warm-up + 18 measured requests reached the model; only the measured are in the artifact.
	if len(h.model.prompts) != 21 {
		t.Fatalf("%d requests reached the model", len(h.model.prompts))
	}
	f, err := os.Open(h.runs.RunDir(id) + "/" + benchmarkrunner.RecordsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		if strings.Contains(sc.Text(), "inter_token_ms") || strings.Contains(sc.Text(), "sk-test") {
			t.Fatalf("artifact line %s", sc.Text())
		}
	}
	if lines != 18 {
		t.Fatalf("%d records in the artifact", lines)
	}
}

func TestSLAMissedDoesNotFailTheRun(t *testing.T) {
	h := start(t, &fakeModel{ttft: 40 * time.Millisecond, itl: time.Millisecond}, fast())
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":4}],"warmup_requests":0,
		"concurrency_stages":[{"concurrency":1,"num_requests":3}],"sla_targets":{"ttft_ms":5,"ttft_percentile":"p50"}}`)
	m := doc(t, h.waitFor(t, id, 30*time.Second, terminal))
	sla := m["sla"].(map[string]any)
	if m["status"] != "succeeded" || sla["met"] != false {
		t.Fatalf("status %v sla %v", m["status"], sla)
	}
	good := m["metrics"].(map[string]any)["request_slo_goodput"].(map[string]any)
	if good["good_requests"] != 0.0 || good["status"] != "measured" {
		t.Fatalf("goodput %v", good)
	}
}

func TestCancelIsHonouredWithinASecond(t *testing.T) {
	h := start(t, &fakeModel{ttft: 20 * time.Millisecond, itl: 20 * time.Millisecond}, fast())
	run := h.cancelInMatrix(t, func() string {
		return h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":50}],"warmup_requests":0,
			"concurrency_stages":[{"concurrency":2,"num_requests":1000}]}`)
	}, 10*time.Second)
	var points []map[string]any
	if !evalrun.Decode(run.MatrixResults, &points) || len(points) != 1 || points[0]["status"] != "failed" {
		t.Fatalf("partial results %v", points)
	}
}

func TestTimeoutFailsTheRun(t *testing.T) {
	h := start(t, &fakeModel{ttft: 10 * time.Millisecond, itl: 50 * time.Millisecond}, fast())
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":100}],"warmup_requests":0,"wait_timeout_seconds":1,
		"concurrency_stages":[{"concurrency":1,"num_requests":100}]}`)
	run := h.waitFor(t, id, 10*time.Second, terminal)
	if run.Status != evalrun.StatusFailed || !strings.Contains(run.ErrorText(), "wait timeout of 1 s") {
		t.Fatalf("status %s error %q", run.Status, run.ErrorText())
	}
}

func TestDeadEndpointFailsBeforeTraffic(t *testing.T) {
	h := start(t, &fakeModel{}, fast())
	// The run points at nothing from its creation (the model list never answers): patching a
	// created run raced the runner's sweep, which could claim it first.
	id := h.createAgainst(t, "http://127.0.0.1:1/v1", "sk-test", `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":4}],"wait_timeout_seconds":1}`)
	run := h.waitFor(t, id, 10*time.Second, terminal)
	if run.Status != evalrun.StatusFailed || !strings.Contains(run.ErrorText(), "not ready") || evalrun.Str(run.Phase) != "preparing-monitoring" {
		t.Fatalf("status %s phase %s error %q", run.Status, evalrun.Str(run.Phase), run.ErrorText())
	}
}

func TestSharedPrefixRateStages(t *testing.T) {
	h := start(t, &fakeModel{ttft: 5 * time.Millisecond, itl: time.Millisecond}, fast())
	id := h.create(t, `{"deployment_execution_id":"exec-1","shared_prefix":{"num_groups":2,"num_prompts_per_group":4,
		"system_prompt_len":40,"question_len":8,"output_len":4,"stages":[{"rate":20,"duration":1},{"rate":40,"duration":1}]}}`)
	m := doc(t, h.waitFor(t, id, 30*time.Second, terminal))
	if m["status"] != "succeeded" {
		t.Fatalf("status %v %v", m["status"], m["error"])
	}
	stages := m["rate_stage_results"].([]any)
	if len(stages) != 2 {
		t.Fatalf("rate stages %v", stages)
	}
	total := 0.0
	for i, s := range stages {
		n := s.(map[string]any)["metrics"].(map[string]any)["request_count"].(float64)
		want := []float64{20, 40}[i]
		if n < want/2 || n > want*2 { // Poisson counts
			t.Fatalf("stage %d sent %v requests for %v expected", i, n, want)
		}
		total += n
	}
	if m["metrics"].(map[string]any)["request_count"] != total || m["capacity_analysis"] == nil {
		t.Fatalf("top-level metrics %v", m["metrics"])
	}
	// Requests of a group share their 40-word system prompt; groups differ.
	h.model.mu.Lock()
	defer h.model.mu.Unlock()
	prefixes := map[string]bool{}
	for _, p := range h.model.prompts {
		words := strings.Fields(p)
		if len(words) != 48 {
			t.Fatalf("prompt of %d words, want 48", len(words))
		}
		prefixes[strings.Join(words[:40], " ")] = true
	}
	if len(prefixes) != 2 {
		t.Fatalf("%d distinct system prompts, want 2", len(prefixes))
	}
}

// lostRun is a run a runner claimed and died with: stored running, owned by a pod that holds no
// lease. It is stored that way at once (a queued run would be claimed by this runner's own sweep
// first); before it is stored, prepare may leave files in its folder.
func lostRun(t *testing.T, h *harness, prepare func(*evalrun.Run)) *evalrun.Run {
	t.Helper()
	req, raw, err := evalrun.ParseRequest([]byte(`{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	lost := evalrun.BuildRun(evalrun.NewID(), req, raw, evalrun.Target{ExecutionID: "exec-1", Model: "fake-model", Endpoint: h.url, Status: "ready"})
	lost.Status = evalrun.StatusRunning
	lost.OwnerInstanceID = evalrun.Ptr("dead-pod")
	if prepare != nil {
		prepare(lost)
	}
	if err := h.runs.Create(context.Background(), lost, "sk-test"); err != nil {
		t.Fatal(err)
	}
	return lost
}

func TestLostRunnerFailsTheRun(t *testing.T) {
	h := start(t, &fakeModel{}, fast())
	id := lostRun(t, h, nil).ID
	run := h.waitFor(t, id, 5*time.Second, terminal)
	if run.Status != evalrun.StatusFailed || !strings.Contains(run.ErrorText(), "runner was lost") || !strings.Contains(run.ErrorText(), "dead-pod") {
		t.Fatalf("status %s error %q", run.Status, run.ErrorText())
	}
	if run.Partial != nil {
		t.Errorf("a run without records is marked partial")
	}
}

// A lost runner's records on disk still count: the run gets the metrics they support and says
// it is partial (98 records and no metrics before).
func TestLostRunnerKeepsWhatItsRecordsSupport(t *testing.T) {
	h := start(t, &fakeModel{}, fast())
	lost := lostRun(t, h, func(lost *evalrun.Run) {
		if err := os.MkdirAll(h.runs.RunDir(lost.ID), 0o700); err != nil {
			t.Fatal(err)
		}
		var lines strings.Builder
		for i := 1; i <= 98; i++ {
			ttft, code := 20.0+float64(i%5), 200
			rec := loadgen.Record{RequestID: int64(i), StatusCode: &code, Successful: true, StartedAtSeconds: float64(i) * 0.1,
				CompletedAtSeconds: float64(i)*0.1 + 0.05, LatencyMs: 50, TTFTMs: &ttft, InputTokens: 8, OutputTokens: 4}
			b, _ := json.Marshal(rec)
			lines.Write(append(b, '\n'))
		}
		lines.WriteString(`{"request_id":99,"succ`) // the line being written when the runner died
		if err := os.WriteFile(h.runs.RecordsPath(lost.ID), []byte(lines.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	m := doc(t, h.waitFor(t, lost.ID, 5*time.Second, terminal))
	metrics, _ := m["metrics"].(map[string]any)
	if m["status"] != "failed" || m["partial"] != true || !strings.Contains(m["partial_reason"].(string), "98 requests") ||
		metrics["request_count"] != 98.0 || metrics["ttft_ms"] == nil {
		t.Fatalf("status %v partial %v (%v) metrics %v", m["status"], m["partial"], m["partial_reason"], metrics)
	}
}

func TestEndpointPolicyIsEnforcedBeforeTraffic(t *testing.T) {
	model := &fakeModel{}
	h := startWith(t, model, fast(), map[string]string{"LENS_ENDPOINT_DENY": "127.0.0.0/8"})
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":4}]}`)
	run := h.waitFor(t, id, 10*time.Second, terminal)
	if run.Status != evalrun.StatusFailed || !strings.Contains(run.ErrorText(), "endpoint policy") || len(model.prompts) != 0 {
		t.Fatalf("status %s error %q, %d requests sent", run.Status, run.ErrorText(), len(model.prompts))
	}
}

func TestMonitoringMustBeReadyBeforeTraffic(t *testing.T) {
	h := start(t, &fakeModel{noMetrics: true}, fast())
	// The budget covers the endpoint probe and at least one scrape of /metrics: with 1 s a loaded
	// host spent it before the first scrape, so the run failed on the budget ("context deadline
	// exceeded") without ever seeing why monitoring was not ready.
	h.expectNotReady(t, 3, "HTTP 404")
}

func TestInlineWorkloadYAMLRuns(t *testing.T) {
	h := start(t, &fakeModel{ttft: 5 * time.Millisecond, itl: time.Millisecond}, fast())
	yaml := "load:\n  type: concurrent\n  stages:\n    - {num_requests: 6, concurrency_level: 2}\n    - {num_requests: 4, concurrency_level: 4}\n" +
		"api: {type: completion, streaming: true}\n" +
		"data:\n  type: random\n  input_distribution: {min: 8, max: 8, mean: 8, std_dev: 0}\n  output_distribution: {min: 3, max: 3, mean: 3, std_dev: 0}\n"
	body, _ := json.Marshal(map[string]any{"deployment_execution_id": "exec-1", "workload_yaml": yaml})
	id := h.create(t, string(body))
	m := doc(t, h.waitFor(t, id, 30*time.Second, terminal))
	metrics := m["metrics"].(map[string]any)
	if m["status"] != "succeeded" || metrics["request_count"] != 10.0 || metrics["total_output_tokens"] != 30.0 || metrics["ttft_ms"] == nil {
		t.Fatalf("status %v error %v metrics %v", m["status"], m["error"], metrics)
	}
	if h.model.peak > 4 {
		t.Fatalf("peak %d", h.model.peak)
	}
}

// TestProgressStreamCarriesStatusPhasesLiveMetricsAndLogs reads the run's progress stream (what
// GET /runs/{id}/events serves) after a real run: every status, the phases, live metrics while
// the workload ran and the log lines, in order, ending with the final status.
func TestProgressStreamCarriesStatusPhasesLiveMetricsAndLogs(t *testing.T) {
	h := start(t, &fakeModel{ttft: 30 * time.Millisecond, itl: 4 * time.Millisecond}, fast())
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":32,"osl":8}],
		"concurrency_stages":[{"concurrency":2,"num_requests":16}],"warmup_requests":1}`)
	h.waitFor(t, id, 30*time.Second, terminal)
	// The record turns final before its last status entry is appended (the stream is a view; a
	// watcher reads the record's status when the stream ends), so wait for that entry too.
	var entries []state.ProgressEntry
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if entries, err = h.deps.Store.ReadProgress(context.Background(), evalrun.Kind, id, "", 1000, 0); err != nil {
			t.Fatal(err)
		}
		sawFinal, sawFinishedLog := false, false
		for _, e := range entries {
			sawFinal = sawFinal || e.Fields["status"] == "succeeded"
			sawFinishedLog = sawFinishedLog || strings.Contains(e.Fields["line"], "Finished succeeded")
		}
		if (sawFinal && sawFinishedLog) || time.Now().After(deadline) {
			break
		}
	}
	var statuses, logs []string
	sawPhase, sawLive := false, false
	for _, e := range entries {
		typ, data := evalrun.DecodeEntry(e.Fields)
		d := data.(map[string]any)
		switch typ {
		case "status":
			if s := d["status"].(string); len(statuses) == 0 || statuses[len(statuses)-1] != s {
				statuses = append(statuses, s)
			}
			sawPhase = sawPhase || d["phase"] == "matrix-0"
			// A progress message that names a phase names the entry's own phase.
			if msg, _ := d["progress_message"].(string); d["phase"] != nil && strings.Contains(msg, ": ") &&
				!strings.HasPrefix(msg, d["phase"].(string)+": ") {
				t.Errorf("status entry of phase %v says %q", d["phase"], msg)
			}
			if live, ok := d["live_metrics"].(json.RawMessage); ok && strings.Contains(string(live), `"completed_requests"`) {
				sawLive = true
			}
		case "log":
			logs = append(logs, d["line"].(string))
		}
	}
	if got := strings.Join(statuses, ","); got != "queued,running,succeeded" {
		t.Errorf("statuses %s", got)
	}
	if !sawPhase || !sawLive {
		t.Errorf("phase matrix-0 seen %v, live metrics seen %v", sawPhase, sawLive)
	}
	if all := strings.Join(logs, "\n"); !strings.Contains(all, "Phase matrix-0") || !strings.Contains(all, "Finished succeeded") {
		t.Errorf("logs %s", all)
	}
}

// A run of three repetitions sends its workload three times back to back (warm-up once), keeps
// each repetition's summary, the spread of the headline metrics, 100 bootstrap replicates per
// repetition and metric, and an SLA verdict that says how many repetitions met each target.
func TestRepetitions(t *testing.T) {
	h := start(t, &fakeModel{ttft: 10 * time.Millisecond, itl: 2 * time.Millisecond}, fast())
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":16,"osl":6}],"warmup_requests":2,"repetitions":3,
		"concurrency_stages":[{"concurrency":2,"num_requests":8}],"sla_targets":{"ttft_ms":1000,"success_rate_min_percent":99}}`)
	m := doc(t, h.waitFor(t, id, 30*time.Second, terminal))
	if m["status"] != "succeeded" {
		t.Fatalf("status %v %v", m["status"], m["error"])
	}
	if len(h.model.prompts) != 2+3*8 {
		t.Fatalf("%d requests reached the model, want 2 warm-up + 3 x 8", len(h.model.prompts))
	}
	metrics := m["metrics"].(map[string]any)
	if metrics["request_count"] != 24.0 || metrics["repetitions"] != 3.0 {
		t.Fatalf("request_count %v repetitions %v", metrics["request_count"], metrics["repetitions"])
	}
	spread := metrics["repetition_spread"].(map[string]any)["ttft_ms"].(map[string]any)
	if spread["repetitions"] != 3.0 || spread["min"].(float64) > spread["mean"].(float64) || spread["stddev"] == nil {
		t.Fatalf("ttft spread %v", spread)
	}
	reps := m["repetition_results"].([]any)
	if len(reps) != 3 || reps[2].(map[string]any)["request_count"] != 8.0 || reps[1].(map[string]any)["repetition"] != 1.0 {
		t.Fatalf("repetition_results %v", reps)
	}
	boot := m["bootstrap"].(map[string]any)
	brs := boot["repetitions"].([]any)
	if boot["replicates"] != 100.0 || len(brs) != 3 {
		t.Fatalf("bootstrap %v", boot)
	}
	if n := len(brs[0].(map[string]any)["replicates"].(map[string]any)["ttft_ms"].([]any)); n != 100 {
		t.Fatalf("%d ttft replicates", n)
	}
	// The stage's 24 requests took three stage-lengths: its throughput is that of one stage.
	stage := m["matrix_results"].([]any)[0].(map[string]any)["stage_metrics"].([]any)[0].(map[string]any)["metrics"].(map[string]any)
	oneRep := reps[0].(map[string]any)
	if stage["request_count"] != 24.0 || stage["throughput_rps"].(float64) > 2*oneRep["throughput_rps"].(float64) {
		t.Fatalf("stage %v rps, one repetition %v rps", stage["throughput_rps"], oneRep["throughput_rps"])
	}
	sla := m["sla"].(map[string]any)
	ttft := sla["checks"].(map[string]any)["ttft"].(map[string]any)
	if sla["repetitions_met"] != 3.0 || sla["repetitions"] != 3.0 || ttft["repetitions_met"] != 3.0 || ttft["margin"].(float64) <= 900 {
		t.Fatalf("sla %v", sla)
	}
	// The records name their repetition.
	f, err := os.Open(h.runs.RunDir(id) + "/" + benchmarkrunner.RecordsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[float64]int{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec struct {
			Metadata map[string]any `json:"metadata"`
		}
		_ = json.Unmarshal(sc.Bytes(), &rec)
		seen[rec.Metadata["repetition"].(float64)]++
	}
	if seen[0] != 8 || seen[1] != 8 || seen[2] != 8 {
		t.Fatalf("records by repetition %v", seen)
	}
}
