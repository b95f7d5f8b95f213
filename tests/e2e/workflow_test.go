package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/deploy/local"
	"github.com/lensfn/lensfn/tests/stacktest"
)

// workflowStack runs the whole evaluation pipeline on the local stack: inventory-api,
// evaluation-api, benchmark-runner, the deployer (local provider: simulators and routers as
// child processes) and the workflow-orchestrator. It returns the stack's base URL, the local
// cluster's session and the directory the deployer starts inference-sim and inference-router from.
func workflowStack(t *testing.T) (base, session, binDir string) {
	stack, binDir := workflowStackOf(t)
	return stack.APIURL, stack.LocalSessionID, binDir
}

func workflowStackOf(t *testing.T) (*local.Stack, string) {
	t.Helper()
	t.Setenv("POD_IP", "127.0.0.1")
	binDir := stacktest.Build(t, "inference-sim", "inference-router")
	stack := startStack(t, stackOptions{only: []string{"inventory-api", "evaluation-api", "benchmark-runner", "deployer", "workflow-orchestrator"},
		env: map[string]string{"LENS_LEASE_TTL": "3s", "LENS_SWEEP_INTERVAL": "500ms", "LENS_DEPLOY_TIMEOUT": "60s"}})
	return stack, binDir
}

func configuration(t *testing.T, base, provider, content string) string {
	t.Helper()
	body := `{"name":"e2e ` + provider + `","schema_version":"deployable-configuration.v1","type":"guide","format":"lensfn",` +
		`"provider_ref":"` + provider + `","content":` + content + `}`
	code, resp := post(t, base+"/api/v1/configurations", "application/json", body, nil)
	var c struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal([]byte(resp), &c) != nil {
		t.Fatalf("configuration: %d %s", code, resp)
	}
	return c.ID
}

func createEvaluation(t *testing.T, api, body string) map[string]any {
	t.Helper()
	code, resp := post(t, api+"/evaluations", "application/json", body, nil)
	if code != http.StatusAccepted {
		t.Fatalf("POST /evaluations: %d %s", code, resp)
	}
	var created map[string]any
	_ = json.Unmarshal([]byte(resp), &created)
	return created
}

func getWorkflow(t *testing.T, api, id string) map[string]any {
	t.Helper()
	code, body := get(t, api+"/workflow-runs/"+id)
	if code != 200 {
		t.Fatalf("GET workflow %s: %d %s", id, code, body)
	}
	var wf map[string]any
	_ = json.Unmarshal([]byte(body), &wf)
	return wf
}

func waitWorkflow(t *testing.T, api, id string, timeout time.Duration, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var wf map[string]any
	eventually(t, timeout, "workflow "+id+" "+what, func() bool { wf = getWorkflow(t, api, id); return cond(wf) })
	return wf
}

func workflowFinished(wf map[string]any) bool {
	s := wf["status"]
	return s == "succeeded" || s == "failed" || s == "cancelled"
}

func caseOf(wf map[string]any, id string) map[string]any {
	cases, _ := wf["cases"].([]any)
	for _, c := range cases {
		if m := c.(map[string]any); m["id"] == id {
			return m
		}
	}
	return nil
}

func allCleaned(wf map[string]any) bool {
	cases, _ := wf["cases"].([]any)
	for _, c := range cases {
		m := c.(map[string]any)
		if m["execution_id"] != nil && m["baseline_type"] != "kubernetes-service" && m["cleanup_status"] != "cleaned" {
			return false
		}
	}
	return true
}

// simulatorsRunning counts live processes started from binDir's inference-sim or inference-router.
func simulatorsRunning(binDir string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		exe := strings.SplitN(string(raw), "\x00", 2)[0]
		if exe == filepath.Join(binDir, "inference-sim") || exe == filepath.Join(binDir, "inference-router") {
			stat, _ := os.ReadFile(strings.TrimSuffix(p, "cmdline") + "stat")
			if s := string(stat); len(s) > 0 {
				f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
				if len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
					continue
				}
			}
			n++
		}
	}
	return n
}

// The simulators' latency model: per token, prefill 1 ms for every prompt token that is not
// already in the replica's KV cache, then 1 ms per output token. A request whose 512-token
// system prompt is cached on the replica it reaches prefills only its 16-token question.
const prefixSim = `"simulator":{"latency-calculator":"per-token","prefill-time-per-token":"1ms","inter-token-latency":"1ms",` +
	`"block-size":16,"enable-kvcache":true,"kv-cache-size":8192}`

// Two configurations on a shared-prefix workload: the guide, optimized-baseline with the
// prefix-affinity router in front of its replicas, against the direct-vllm baseline: the same
// replicas (the baseline inherits the guide's replica count and simulator flags) behind plain
// round-robin balancing. The workload has 5 prompt groups, each with its own 512-token system
// prompt, and request k belongs to group k mod 5. With 4 replicas round robin sends request k to
// replica k mod 4, so every group reaches every replica and misses once on each (20 cold
// prefills of the 40 requests); the affinity router sends each group to the replica that holds
// its prefix, so only each group's first request misses (5 cold prefills). Fewer cold prefills
// means a lower mean TTFT (the report's TTFT ratio guide/baseline < 1) and a higher prefix
// cache hit rate (the replicas' own vllm:prefix_cache_hits_total / queries, which the runner
// scrapes). Every deployment is cleaned up after: no simulator or router process is left.
func TestEvaluationPrefixAffinityBeatsDirectVLLM(t *testing.T) {
	base, session, binDir := workflowStack(t)
	api := base + "/api/v1/evaluate"
	guide := configuration(t, base, "optimized-baseline", `{"model":{"name":"sim-model"},"decode":{"replicas":4,"max_num_seqs":64},`+
		`"router":{"profile":"prefix-affinity"},`+prefixSim+`}`)
	body := `{"name":"prefix affinity","cluster_session_id":"` + session + `","benchmark_plans":[{"id":"shared-prefix",` +
		`"configuration_artifact_id":"` + guide + `","baseline_types":["direct-vllm"],"benchmark":{"shared_prefix":{"num_groups":5,` +
		`"num_prompts_per_group":8,"system_prompt_len":512,"question_len":16,"output_len":4,"stages":[{"rate":10,"duration":4}]}}}]}`
	created := createEvaluation(t, api, body)
	id := created["id"].(string)
	started := time.Now()
	wf := waitWorkflow(t, api, id, 4*time.Minute, "finished", workflowFinished)
	if wf["status"] != "succeeded" {
		t.Fatalf("evaluation ended %v: %v (cases %v)", wf["status"], wf["error"], wf["cases"])
	}
	elapsed := time.Since(started)
	traffic := 0.0
	for _, cs := range wf["cases"].([]any) {
		if m, ok := cs.(map[string]any)["metrics"].(map[string]any); ok {
			traffic += m["benchmark_time_seconds"].(float64)
		}
	}
	// The orchestration overhead (BENCHMARKS.md): deploy 8 replicas and 2 routers, queue and
	// start both benchmarks, compare, excluding the benchmarks' own traffic time.
	t.Logf("evaluation succeeded in %s, %.2f s of it traffic: orchestration overhead %.2f s",
		elapsed.Round(time.Millisecond), traffic, elapsed.Seconds()-traffic)
	report := wf["report"].(map[string]any)
	comparisons := report["comparisons"].([]any)
	if report["comparison_version"] != 2.0 || len(comparisons) != 1 {
		t.Fatalf("report %v", report)
	}
	c := comparisons[0].(map[string]any)
	if c["guide_case_id"] != "guide-1" || c["baseline_case_id"] != "baseline-1" || c["baseline_type"] != "direct-vllm" {
		t.Fatalf("comparison %v", c)
	}
	stats, ok := c["rate_stage_statistics"].(map[string]any)
	if !ok {
		t.Fatalf("no rate-stage statistics: %v", c)
	}
	ttftRatio := stats["geometric_mean_ratio"].(map[string]any)["ttft_ms"].(float64)
	gm, bm := c["guide_metrics"].(map[string]any), c["baseline_metrics"].(map[string]any)
	gHit, gOK := gm["prefix_cache_hit_rate"].(float64)
	bHit, bOK := bm["prefix_cache_hit_rate"].(float64)
	t.Logf("TTFT ratio (mean) %.3f; prefix cache hit rate guide %.3f, baseline %.3f", ttftRatio, gHit, bHit)
	if ttftRatio >= 1 {
		t.Errorf("TTFT ratio %.3f: the affinity router should prefill fewer cold prefixes than round robin", ttftRatio)
	}
	if !gOK || !bOK || gHit <= bHit {
		t.Errorf("prefix cache hit rate guide %v, baseline %v: affinity must hit more", gm["prefix_cache_hit_rate"], bm["prefix_cache_hit_rate"])
	}
	wf = waitWorkflow(t, api, id, time.Minute, "cleaned up", allCleaned)
	eventually(t, 30*time.Second, "no simulator or router left", func() bool { return simulatorsRunning(binDir) == 0 })
	code, execs := get(t, base+"/api/v1/deployments/executions?deployment_ownership=evaluation")
	if code != 200 || !strings.Contains(execs, `"total":0`) {
		t.Fatalf("evaluation executions left: %d %s", code, execs)
	}
	// The details read expands the cases with their runs; the stored report is fresh.
	code, details := get(t, api+"/workflow-runs/"+id+"/details")
	if code != 200 || !strings.Contains(details, `"evaluation":{`) {
		t.Fatalf("details %d %.300s", code, details)
	}
	if code := del(t, api+"/workflow-runs/"+id); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	for _, cs := range wf["cases"].([]any) {
		run := cs.(map[string]any)["evaluation_run_id"].(string)
		if code, _ := get(t, api+"/runs/"+run); code != 404 {
			t.Fatalf("run %s survived the workflow's delete: %d", run, code)
		}
	}
}

// Cancel a case mid-benchmark (its run is stopped, its deployment cleaned, then it is
// cancelled), retry the workflow (it runs again to succeeded), and delete it.
func TestWorkflowCancelCaseRetryDelete(t *testing.T) {
	base, session, binDir := workflowStack(t)
	api := base + "/api/v1/evaluate"
	guide := configuration(t, base, "optimized-baseline", `{"model":{"name":"sim-model"},"decode":{"replicas":2},"router":{"profile":"optimized"},`+prefixSim+`}`)
	body := `{"cluster_session_id":"` + session + `","benchmark_plans":[{"configuration_artifact_id":"` + guide + `","include_baseline":false,` +
		`"benchmark":{"shared_prefix":{"num_groups":2,"num_prompts_per_group":4,"system_prompt_len":64,"question_len":8,"output_len":4,` +
		`"stages":[{"rate":4,"duration":6}]}}}]}`
	created := createEvaluation(t, api, body)
	id := created["id"].(string)
	wf := waitWorkflow(t, api, id, 2*time.Minute, "benchmarking", func(wf map[string]any) bool {
		c := caseOf(wf, "guide-1")
		if c == nil || c["status"] != "benchmarking" {
			return false
		}
		run := getRun(t, api, c["evaluation_run_id"].(string))
		return run["status"] == "running"
	})
	runID := caseOf(wf, "guide-1")["evaluation_run_id"].(string)
	code, resp := post(t, api+"/workflow-runs/"+id+"/cases/guide-1/cancel", "application/json", "", nil)
	if code != 200 || !strings.Contains(resp, `"id":"guide-1"`) {
		t.Fatalf("case cancel: %d %s", code, resp)
	}
	wf = waitWorkflow(t, api, id, time.Minute, "cancelled", func(wf map[string]any) bool { return wf["status"] == "cancelled" })
	g := caseOf(wf, "guide-1")
	if g["status"] != "cancelled" || g["cleanup_status"] != "cleaned" {
		t.Fatalf("the case is cancelled only after its cleanup: %v", g)
	}
	if run := getRun(t, api, runID); run["status"] != "cancelled" {
		t.Fatalf("the case's run is %v", run["status"])
	}
	eventually(t, 30*time.Second, "no simulator left after the cancel", func() bool { return simulatorsRunning(binDir) == 0 })
	if code, _ := post(t, api+"/workflow-runs/"+id+"/retry", "application/json", "", nil); code != http.StatusAccepted {
		t.Fatalf("retry: %d", code)
	}
	wf = waitWorkflow(t, api, id, 3*time.Minute, "finished after the retry", workflowFinished)
	if wf["status"] != "succeeded" || caseOf(wf, "guide-1")["evaluation_run_id"] == runID {
		t.Fatalf("retry ended %v: %v", wf["status"], wf["error"])
	}
	waitWorkflow(t, api, id, time.Minute, "cleaned up", allCleaned)
	if code := del(t, api+"/workflow-runs/"+id); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	for _, run := range []string{runID, caseOf(wf, "guide-1")["evaluation_run_id"].(string)} {
		if code, _ := get(t, api+"/runs/"+run); code != 404 {
			t.Fatalf("run %s survived the delete: %d", run, code)
		}
	}
	eventually(t, 30*time.Second, "no simulator left", func() bool { return simulatorsRunning(binDir) == 0 })
}

// One evaluation of two plans: an optimized-baseline guide with a kubernetes-service baseline
// (benchmarked on the guide's own replicas through the router's plain balanced endpoint, right
// after the guide, deploying nothing), and a 1P1D pd-disaggregation guide with its
// budget-matched direct-vllm baseline ((1x1 + 1x1) / 1 = 2 replicas). The orchestrator is
// killed (SIGKILL) while the first guide deploys, and the deployer while the P/D guide deploys;
// the stack restarts both and the new processes continue from Redis: the evaluation succeeds
// and nothing is left running (the simulators the dead deployer started included).
func TestEvaluationKubernetesServiceAndPDWithKilledOrchestratorAndDeployer(t *testing.T) {
	stack, binDir := workflowStackOf(t)
	base, api := stack.APIURL, stack.APIURL+"/api/v1/evaluate"
	opt := configuration(t, base, "optimized-baseline", `{"model":{"name":"sim-model"},"decode":{"replicas":2},`+prefixSim+`}`)
	pd := configuration(t, base, "pd-disaggregation", `{"model":{"name":"sim-model"},"prefill":{"replicas":1},"decode":{"replicas":1},`+prefixSim+`}`)
	bench := `"benchmark":{"shared_prefix":{"num_groups":2,"num_prompts_per_group":4,"system_prompt_len":64,"question_len":8,"output_len":4,"stages":[{"rate":4,"duration":2}]}}`
	body := `{"cluster_session_id":"` + stack.LocalSessionID + `","benchmark_plans":[` +
		`{"id":"same-pods","configuration_artifact_id":"` + opt + `","baseline_types":["kubernetes-service"],` + bench + `},` +
		`{"id":"pd","configuration_artifact_id":"` + pd + `","baseline_types":["direct-vllm"],` + bench + `}]}`
	created := createEvaluation(t, api, body)
	id := created["id"].(string)
	order := []string{}
	for _, c := range created["cases"].([]any) {
		order = append(order, c.(map[string]any)["id"].(string))
	}
	if strings.Join(order, ",") != "guide-1,baseline-1,guide-2,baseline-2" {
		t.Fatalf("case order %v", order)
	}
	pdBaseline := caseOf(created, "baseline-2")["deployment_configuration"].(map[string]any)["content"].(map[string]any)
	if pdBaseline["decode"].(map[string]any)["replicas"] != 2.0 {
		t.Fatalf("P/D budget-matched baseline %v", pdBaseline)
	}
	waitWorkflow(t, api, id, time.Minute, "deploying", func(wf map[string]any) bool { return caseOf(wf, "guide-1")["status"] == "deploying" })
	pid := stack.PID("workflow-orchestrator")
	if pid <= 0 {
		t.Fatal("no orchestrator pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the orchestrator restarted", func() bool { p := stack.PID("workflow-orchestrator"); return p > 0 && p != pid })
	// Then the deployer, while it brings up the P/D guide: a new deployer reaps what the dead
	// one started (its lease expired) and deploys afresh.
	waitWorkflow(t, api, id, 2*time.Minute, "P/D guide deploying", func(wf map[string]any) bool { return caseOf(wf, "guide-2")["status"] == "deploying" })
	dpid := stack.PID("deployer")
	if err := syscall.Kill(dpid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deployer restarted", func() bool { p := stack.PID("deployer"); return p > 0 && p != dpid })
	wf := waitWorkflow(t, api, id, 4*time.Minute, "finished", workflowFinished)
	if wf["status"] != "succeeded" {
		t.Fatalf("evaluation ended %v: %v", wf["status"], wf["error"])
	}
	g, ks := caseOf(wf, "guide-1"), caseOf(wf, "baseline-1")
	if ks["execution_id"] != g["execution_id"] || ks["endpoint"] != g["baseline_url"] || !strings.HasSuffix(ks["endpoint"].(string), "/balanced/v1") {
		t.Fatalf("kubernetes-service baseline ran on %v (guide %v, balanced %v)", ks["endpoint"], g["endpoint"], g["baseline_url"])
	}
	if run := getRun(t, api, ks["evaluation_run_id"].(string)); run["endpoint_kind"] != "kubernetes-service" {
		t.Fatalf("kubernetes-service run %v", run["endpoint_kind"])
	}
	report := wf["report"].(map[string]any)
	if n := len(report["comparisons"].([]any)); n != 2 {
		t.Fatalf("%d comparisons", n)
	}
	for _, c := range report["comparisons"].([]any) {
		m := c.(map[string]any)
		parity := m["parity"].(map[string]any)
		if m["guide_case_id"] == "guide-2" && (parity["guide_accelerators"] != 2.0 || parity["baseline_accelerators"] != 2.0) {
			t.Fatalf("P/D parity %v", parity)
		}
	}
	waitWorkflow(t, api, id, time.Minute, "cleaned up", allCleaned)
	eventually(t, 30*time.Second, "no simulator or router left", func() bool { return simulatorsRunning(binDir) == 0 })
}
