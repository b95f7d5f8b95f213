package benchmarkrunner_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/promtargets"
	"github.com/lensfn/lensfn/runtime/timingtest"
)

// meteredModel is a fakeModel with a vLLM-like /metrics: every series the runner reads,
// counting what it served, and the cache configuration.
type meteredModel struct {
	*fakeModel
	served atomic.Int64
}

func (m *meteredModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		m.fakeModel.ServeHTTP(w, r)
		if r.URL.Path != "/v1/models" {
			m.served.Add(1)
		}
		return
	}
	m.mu.Lock()
	running, generated := m.inFlight, m.generated
	m.mu.Unlock()
	served := m.served.Load()
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fake-model\"} %d\n"+
		"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"fake-model\"} 0\n"+
		"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"fake-model\"} 0.25\n"+
		"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"fake-model\"} %d\n"+
		"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=\"fake-model\"} %d\n"+
		"# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"fake-model\"} %d\n"+
		"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"fake-model\"} %d\n"+
		"# TYPE vllm:request_success_total counter\nvllm:request_success_total{model_name=\"fake-model\",finished_reason=\"length\"} %d\n"+
		"# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"4096\"} 1\n",
		running, generated, served*8, served*8, served*2, served)
}

// replicas are two metered models behind a round-robin router.
type replicas struct {
	models [2]*meteredModel
	urls   [2]string
	router string
}

func startReplicas(t *testing.T) *replicas {
	t.Helper()
	rs := &replicas{}
	var proxies [2]*httputil.ReverseProxy
	for i := range rs.models {
		rs.models[i] = &meteredModel{fakeModel: &fakeModel{ttft: 5 * time.Millisecond, itl: 2 * time.Millisecond}}
		srv := httptest.NewServer(rs.models[i])
		t.Cleanup(srv.Close)
		rs.urls[i] = srv.URL
		u, _ := url.Parse(srv.URL)
		proxies[i] = httputil.NewSingleHostReverseProxy(u)
	}
	var next atomic.Int64
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[next.Add(1)%2].ServeHTTP(w, r)
	}))
	t.Cleanup(router.Close)
	rs.router = router.URL + "/v1"
	return rs
}

// register records the replicas in h's inventory as exec-1, as the deployer records a routed
// deployment: the router's endpoint and each replica's base URL.
func (rs *replicas) register(t *testing.T, h *harness) {
	t.Helper()
	inv := &inventory.Repo{Store: h.deps.Store, Sealer: h.runs.Sealer}
	if err := inv.PutExecution(context.Background(), inventory.Execution{ID: "exec-1", ClusterSessionID: "s-1", Name: "routed",
		Model: "fake-model", Endpoint: rs.router, Ownership: inventory.OwnershipEvaluation, ReplicaEndpoints: rs.urls[:]}, ""); err != nil {
		t.Fatal(err)
	}
}

// createAgainst stores a queued run of body against endpoint (requests carrying key), as
// evaluation-api creates it for execution exec-1.
func (h *harness) createAgainst(t *testing.T, endpoint, key, body string) string {
	t.Helper()
	req, raw, err := evalrun.ParseRequest([]byte(body))
	if err == nil {
		err = evalrun.ValidateRequest(req)
	}
	if err != nil {
		t.Fatal(err)
	}
	run := evalrun.BuildRun(evalrun.NewID(), req, raw, evalrun.Target{ExecutionID: "exec-1", Model: "fake-model", Endpoint: endpoint, Status: "ready"})
	if err := h.runs.Create(context.Background(), run, key); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

const routedMatrix = `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":8}],"warmup_requests":0,
	"concurrency_stages":[{"concurrency":2,"num_requests":40}]}`

// checkFleetEvidence asserts the evidence of a routed run over both replicas.
func checkFleetEvidence(t *testing.T, m map[string]any, rs *replicas, source string) {
	t.Helper()
	if m["status"] != "succeeded" {
		t.Fatalf("status %v error %v", m["status"], m["error"])
	}
	metrics := m["metrics"].(map[string]any)
	obs := metrics["observability"].(map[string]any)
	if obs["source"] != source || obs["status"] != "available" || obs["flow_status"] != "available" {
		t.Fatalf("observability %v", obs)
	}
	if mon := m["monitoring"].(map[string]any); mon["source"] != source || mon["status"] != "available" ||
		!strings.Contains(mon["message"].(string), "All 2 serving endpoints") {
		t.Fatalf("monitoring %v", mon)
	}
	per := metrics["per_endpoint"].([]any)
	if len(per) != 2 {
		t.Fatalf("per_endpoint %v", per)
	}
	total := 0.0
	for i, row := range per {
		e := row.(map[string]any)
		share, ok := e["request_share"].(float64)
		if !ok || share < 0.3 || share > 0.7 || e["endpoint"] != rs.urls[i] {
			t.Fatalf("endpoint %d: %v (round robin: about half each)", i, e)
		}
		total += share
	}
	if math.Abs(total-1) > 0.002 {
		t.Fatalf("request shares add up to %v", total)
	}
	cv, ok := metrics["token_load_cv"].(float64)
	if !ok || cv < 0 || cv > 0.4 {
		t.Fatalf("token_load_cv %v (round robin spreads tokens evenly)", metrics["token_load_cv"])
	}
	// The fake's prefix counters: 2 hits per 8 queries.
	if metrics["prefix_cache_hit_rate"] != 0.25 || metrics["kv_cache_usage"] != 0.25 || metrics["queue_depth"] != 0.0 {
		t.Fatalf("hit rate %v kv %v queue %v", metrics["prefix_cache_hit_rate"], metrics["kv_cache_usage"], metrics["queue_depth"])
	}
	snap := m["resource_snapshot"].(map[string]any)
	rows, _ := snap["endpoints"].([]any)
	if snap["status"] != "captured" || snap["source"] != source || len(rows) != 2 {
		t.Fatalf("resource_snapshot %v", snap)
	}
	for _, r := range rows {
		row := r.(map[string]any)
		if row["status"] != "captured" || row["cache_config"].(map[string]any)["num_gpu_blocks"] != "4096" {
			t.Fatalf("snapshot row %v", row)
		}
	}
}

func TestRoutedRunScrapesEveryReplica(t *testing.T) {
	h := start(t, &fakeModel{}, fast())
	rs := startReplicas(t)
	rs.register(t, h)
	id := h.createAgainst(t, rs.router, "", routedMatrix)
	m := doc(t, h.waitFor(t, id, 30*time.Second, terminal))
	checkFleetEvidence(t, m, rs, "scrape")
	if a := m["metrics"].(map[string]any)["observability"].(map[string]any)["clock_alignment"].(map[string]any); a["status"] != "unavailable" || a["query_window"] != nil {
		t.Fatalf("scrape path clock_alignment %v", a)
	}
}

// startPrometheus runs a real prometheus scraping targets every 250 ms through file-based
// discovery in the directory it returns with its URL, or skips the test when it is not
// installed.
func startPrometheus(t *testing.T, targets []string) (string, string) {
	return startPrometheusEvery(t, targets, "250ms")
}

func startPrometheusEvery(t *testing.T, targets []string, interval string) (string, string) {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not on PATH (apt-get install prometheus): the Prometheus evidence path is not tested here")
	}
	dir := t.TempDir()
	instances := make([]string, len(targets))
	for i, u := range targets {
		instances[i], _ = promtargets.Instance(u)
	}
	if err := promtargets.Write(filepath.Join(dir, "targets"), "test", instances, nil); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "prometheus.yml")
	_ = os.WriteFile(conf, []byte("global: {scrape_interval: "+interval+", scrape_timeout: 250ms}\nscrape_configs:\n  - job_name: serving\n"+
		"    file_sd_configs: [{files: ['"+filepath.Join(dir, "targets", "*.json")+"'], refresh_interval: 1s}]\n"), 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port), "--log.level=warn")
	var logs strings.Builder
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &logs}, lockedWriter{&mu, &logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("--- prometheus ---\n%s", logs.String())
			mu.Unlock()
		}
	})
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, filepath.Join(dir, "targets")
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus did not get ready in 30 s")
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestRoutedRunReadsEvidenceFromARealPrometheus(t *testing.T) {
	rs := startReplicas(t)
	promURL, _ := startPrometheus(t, rs.urls[:])
	h := startWith(t, &fakeModel{}, fast(), map[string]string{"LENS_PROMETHEUS_URL": promURL})
	rs.register(t, h)
	id := h.createAgainst(t, rs.router, "", routedMatrix)
	m := doc(t, h.waitFor(t, id, 60*time.Second, terminal))
	checkFleetEvidence(t, m, rs, "prometheus")
	obs := m["metrics"].(map[string]any)["observability"].(map[string]any)
	a := obs["clock_alignment"].(map[string]any)
	if off, ok := a["offset_seconds"].(float64); a["status"] != "measured" || !ok || math.Abs(off) > 1 || a["query_window"] == nil {
		t.Fatalf("clock_alignment %v (same host: the offset is near 0)", a)
	}
	if obs["prometheus_url"] != promURL || obs["query_errors"] != nil {
		t.Fatalf("observability %v", obs)
	}
	prep := m["monitoring"].(map[string]any)["preparation"].(map[string]any)
	if prep["prometheus_url"] != promURL || len(prep["targets"].([]any)) != 2 {
		t.Fatalf("preparation %v", prep)
	}
}

func TestPrometheusWithoutTheTargetFailsBeforeTraffic(t *testing.T) {
	promURL, _ := startPrometheus(t, nil)
	h := startWith(t, &fakeModel{}, fast(), map[string]string{"LENS_PROMETHEUS_URL": promURL})
	h.expectNotReady(t, 2, "Prometheus has no scrape target for 127.0.0.1:")
}

// expectNotReady runs a matrix with a budget of seconds against the harness's model and
// expects it failed before any traffic, monitoring not ready because of cause.
func (h *harness) expectNotReady(t *testing.T, budget int, cause string) {
	t.Helper()
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":4}],"wait_timeout_seconds":`+strconv.Itoa(budget)+`}`)
	run := h.waitFor(t, id, time.Duration(budget+18)*time.Second, terminal)
	if run.Status != evalrun.StatusFailed || !strings.Contains(run.ErrorText(), "monitoring was not ready") ||
		!strings.Contains(run.ErrorText(), cause) || len(h.model.prompts) != 0 {
		t.Fatalf("status %s error %q, %d requests", run.Status, run.ErrorText(), len(h.model.prompts))
	}
}

func TestRunListsAnUnscrapedEndpointForPrometheusWhileItRuns(t *testing.T) {
	promURL, targets := startPrometheus(t, nil)
	model := &meteredModel{fakeModel: &fakeModel{ttft: 5 * time.Millisecond, itl: 2 * time.Millisecond}}
	h := startWith(t, model.fakeModel, fast(), map[string]string{"LENS_PROMETHEUS_URL": promURL, "LENS_PROMETHEUS_TARGETS_DIR": targets})
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	id := h.createAgainst(t, srv.URL+"/v1", "", `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":8}],"warmup_requests":0,
		"concurrency_stages":[{"concurrency":2,"num_requests":10}]}`)
	m := doc(t, h.waitFor(t, id, 60*time.Second, terminal))
	if m["status"] != "succeeded" {
		t.Fatalf("status %v error %v", m["status"], m["error"])
	}
	prep := m["monitoring"].(map[string]any)["preparation"].(map[string]any)
	setup := prep["monitor_setup"].(map[string]any)
	instance, _ := promtargets.Instance(srv.URL)
	if setup["status"] != "created" || setup["discovery_file"] != "run-"+id+".json" || setup["targets"].([]any)[0] != instance {
		t.Fatalf("monitor_setup %v", setup)
	}
	metrics := m["metrics"].(map[string]any)
	if obs := metrics["observability"].(map[string]any); obs["source"] != "prometheus" || obs["flow_status"] != "available" ||
		metrics["prefix_cache_hit_rate"] != 0.25 {
		t.Fatalf("evidence %v", metrics)
	}
	if _, err := os.Stat(filepath.Join(targets, "run-"+id+".json")); !os.IsNotExist(err) {
		t.Fatalf("the run's discovery file outlived the run: %v", err)
	}
}

// cancelInMatrix creates a run (create), cancels it once its first matrix point runs (within
// reach), as the API does, and returns it ended, failing unless it ended cancelled within a
// second. A cancel during which the host kept this process off the CPU for longer than half of
// that second is tried again on a new run (timingtest.RetryTimed): the delay, not the runner,
// would have used the second up.
func (h *harness) cancelInMatrix(t *testing.T, create func() string, reach time.Duration) *evalrun.Run {
	t.Helper()
	var run *evalrun.Run
	timingtest.RetryTimed(t, nil, 3, 500*time.Millisecond, func(begin func()) error {
		id := create()
		h.waitFor(t, id, reach, func(r *evalrun.Run) bool {
			return r.Status == evalrun.StatusRunning && evalrun.Str(r.Phase) == "matrix-0"
		})
		begin()
		asked := time.Now()
		h.cancel(t, id)
		run = h.waitFor(t, id, 10*time.Second, terminal)
		took := time.Since(asked)
		if run.Status != evalrun.StatusCancelled {
			t.Fatalf("status %s after %s: %s", run.Status, took, run.ErrorText())
		}
		if took > time.Second {
			return fmt.Errorf("cancelled after %s, want within a second", took)
		}
		return nil
	})
	return run
}

func TestCancelIsHonouredWithinASecondThroughPrometheus(t *testing.T) {
	// Prometheus scrapes every 3 s: a cancelled run must not wait for its next scrape.
	model := &meteredModel{fakeModel: &fakeModel{ttft: 20 * time.Millisecond, itl: 20 * time.Millisecond}}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	promURL, _ := startPrometheusEvery(t, []string{srv.URL}, "3s")
	h := startWith(t, model.fakeModel, fast(), map[string]string{"LENS_PROMETHEUS_URL": promURL})
	run := h.cancelInMatrix(t, func() string {
		return h.createAgainst(t, srv.URL+"/v1", "", `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":50}],"warmup_requests":0,
			"concurrency_stages":[{"concurrency":2,"num_requests":1000}]}`)
	}, 30*time.Second)
	var metrics map[string]any
	if !evalrun.Decode(run.Metrics, &metrics) || metrics["observability"].(map[string]any)["source"] != "prometheus" {
		t.Fatalf("a cancelled run keeps its evidence: %v", metrics["observability"])
	}
}
