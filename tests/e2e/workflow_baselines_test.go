package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The simple workflow (POST /workflow-runs): one configuration, the optimized-baseline the
// request describes (model, replicas), deployed by the local provider, benchmarked with the
// shipped default workload (sanity_random.yaml: 1 request/s for 30 s), its run's terminal
// status and metrics copied onto the workflow, and its deployment cleaned up after (no
// simulator or router process left, no evaluation-owned execution).
func TestSimpleWorkflowDeploysBenchmarksAndCleansUp(t *testing.T) {
	base, session, binDir := workflowStack(t)
	api := base + "/api/v1/evaluate"
	if code, resp := post(t, api+"/workflow-runs", "application/json", `{"model":"sim-model","cluster_session_id":"`+session+`","replicas":0}`, nil); code != 422 {
		t.Fatalf("replicas 0: %d %s", code, resp)
	}
	code, resp := post(t, api+"/workflow-runs", "application/json", `{"model":"sim-model","cluster_session_id":"`+session+`","replicas":2}`, nil)
	if code != http.StatusAccepted {
		t.Fatalf("POST /workflow-runs: %d %s", code, resp)
	}
	var created map[string]any
	if err := json.Unmarshal([]byte(resp), &created); err != nil {
		t.Fatal(err)
	}
	id := created["id"].(string)
	if created["status"] != "deploying" || created["workload"] != "sanity_random.yaml" {
		t.Fatalf("created %v", created)
	}
	// While it benchmarks, the deployment is the local provider's: two simulators behind a router.
	waitWorkflow(t, api, id, 2*time.Minute, "benchmarking", func(wf map[string]any) bool { return wf["status"] == "benchmarking" })
	running := simulatorsRunning(binDir)
	if running != 3 {
		t.Errorf("%d simulator and router processes while benchmarking, want 2 replicas + 1 router", running)
	}
	wf := waitWorkflow(t, api, id, 2*time.Minute, "finished", workflowFinished)
	if wf["status"] != "succeeded" {
		t.Fatalf("workflow ended %v: %v (cases %v)", wf["status"], wf["error"], wf["cases"])
	}
	m, ok := wf["metrics"].(map[string]any)
	if !ok {
		t.Fatalf("no metrics on the succeeded workflow: %v", wf)
	}
	// sanity_random.yaml: Poisson arrivals at 1 request/s for 30 s.
	if n, _ := m["request_count"].(float64); n < 10 || m["success_rate"] != 100.0 {
		t.Fatalf("metrics: %v requests, success rate %v", m["request_count"], m["success_rate"])
	}
	if ttft, _ := m["ttft_ms"].(float64); ttft <= 0 {
		t.Fatalf("ttft_ms %v", m["ttft_ms"])
	}
	// The simple workflow shows its one case on itself: the child run is evaluation_run_id.
	runID, _ := wf["evaluation_run_id"].(string)
	if run := getRun(t, api, runID); run["status"] != "succeeded" || run["evaluation_workflow_id"] != id {
		t.Fatalf("the workflow's run %q: %v (workflow %v)", runID, run["status"], run["evaluation_workflow_id"])
	}
	eventually(t, 30*time.Second, "no simulator or router left", func() bool { return simulatorsRunning(binDir) == 0 })
	eventually(t, 30*time.Second, "no evaluation execution left", func() bool {
		code, execs := get(t, base+"/api/v1/deployments/executions?deployment_ownership=evaluation")
		return code == 200 && strings.Contains(execs, `"total":0`)
	})
	if code := del(t, api+"/workflow-runs/"+id); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := get(t, api+"/runs/"+runID); code != 404 {
		t.Fatalf("run %s survived the workflow's delete: %d", runID, code)
	}
}

// The three router-profile baselines of lens-evaluation.md §4 in one evaluation, against an
// optimized-baseline guide (optimized router profile), all on the same shared-prefix workload
// and the same replicas (the baselines deep-copy the guide's content; only the router profile
// changes): router-neutral runs the router's random profile, load-only its load profile
// (in-flight requests and queue gauges), affinity-only its prefix-affinity profile. Each case
// is checked to have been served by a router of the profile its baseline type names (the
// router's own routing-decision metric, read while the case benchmarks), and each appears in
// the comparison report under its baseline_type.
//
// The mechanism: 5 prompt groups, each with its own 512-token system prompt, request k in group
// k mod 5, 4 replicas, a per-token prefill (1 ms per uncached prompt token). Affinity-only sends
// every group to the replica that already holds its prefix, so only each group's first request
// prefills the prompt cold (5 of 30 misses); load-only and router-neutral choose a replica
// without looking at the prompt (least in flight, random among equals; or random), so a group's
// requests land on several replicas and miss once on each. Hence affinity-only's prefix cache
// hit rate (the replicas' own vllm:prefix_cache_hits/queries, which the runner scrapes) is
// above load-only's and router-neutral's. Everything is cleaned up after.
func TestEvaluationRouterProfileBaselines(t *testing.T) {
	base, session, binDir := workflowStack(t)
	api := base + "/api/v1/evaluate"
	guide := configuration(t, base, "optimized-baseline", `{"model":{"name":"sim-model"},"decode":{"replicas":4,"max_num_seqs":64},`+
		`"router":{"profile":"optimized"},`+prefixSim+`}`)
	body := `{"name":"router profiles","cluster_session_id":"` + session + `","benchmark_plans":[{"id":"profiles",` +
		`"configuration_artifact_id":"` + guide + `","baseline_types":["router-neutral","load-only","affinity-only"],` +
		`"benchmark":{"shared_prefix":{"num_groups":5,"num_prompts_per_group":6,"system_prompt_len":512,"question_len":16,` +
		`"output_len":4,"stages":[{"rate":10,"duration":3}]}}}]}`
	created := createEvaluation(t, api, body)
	id := created["id"].(string)
	wantProfile := map[string]string{"router-neutral": "random", "load-only": "load", "affinity-only": "prefix-affinity"}
	caseType := map[string]string{}
	for _, cs := range created["cases"].([]any) {
		c := cs.(map[string]any)
		if c["kind"] != "baseline" {
			continue
		}
		typ, _ := c["baseline_type"].(string)
		content, _ := c["deployment_configuration"].(map[string]any)["content"].(map[string]any)
		router, _ := content["router"].(map[string]any)
		if router["profile"] != wantProfile[typ] || wantProfile[typ] == "" {
			t.Fatalf("baseline %v (%s) deploys router %v, want profile %q", c["id"], typ, router, wantProfile[typ])
		}
		if decode, _ := content["decode"].(map[string]any); decode["replicas"] != 4.0 {
			t.Fatalf("baseline %v (%s) decode %v: the guide's 4 replicas", c["id"], typ, decode)
		}
		caseType[c["id"].(string)] = typ
	}
	if len(caseType) != 3 {
		t.Fatalf("baseline cases %v", created["cases"])
	}

	// Each case, while it benchmarks, is served by a router making decisions of its profile.
	served := map[string]string{} // case id -> the profile label of its router's decisions
	wf := waitWorkflow(t, api, id, 4*time.Minute, "finished", func(wf map[string]any) bool {
		for _, cs := range wf["cases"].([]any) {
			c := cs.(map[string]any)
			endpoint, _ := c["endpoint"].(string)
			if c["status"] != "benchmarking" || served[c["id"].(string)] != "" || endpoint == "" {
				continue
			}
			if p := decisionProfile(strings.TrimSuffix(endpoint, "/v1")); p != "" {
				served[c["id"].(string)] = p
			}
		}
		return workflowFinished(wf)
	})
	if wf["status"] != "succeeded" {
		t.Fatalf("evaluation ended %v: %v (cases %v)", wf["status"], wf["error"], wf["cases"])
	}
	if served["guide-1"] != "optimized" {
		t.Errorf("the guide was served by a router of profile %q, want optimized", served["guide-1"])
	}
	for cid, typ := range caseType {
		if served[cid] != wantProfile[typ] {
			t.Errorf("baseline %s (%s) was served by a router of profile %q, want %q", cid, typ, served[cid], wantProfile[typ])
		}
	}

	report := wf["report"].(map[string]any)
	hit := map[string]float64{}
	for _, cs := range report["comparisons"].([]any) {
		c := cs.(map[string]any)
		bid, _ := c["baseline_case_id"].(string)
		if c["guide_case_id"] != "guide-1" || caseType[bid] == "" || c["baseline_type"] != caseType[bid] {
			t.Fatalf("comparison %v (baseline cases %v)", c, caseType)
		}
		bm, _ := c["baseline_metrics"].(map[string]any)
		rate, ok := bm["prefix_cache_hit_rate"].(float64)
		if !ok {
			t.Fatalf("baseline %s (%s) has no prefix_cache_hit_rate: %v", bid, caseType[bid], bm)
		}
		if _, dup := hit[caseType[bid]]; dup {
			t.Fatalf("two comparisons for %s", caseType[bid])
		}
		hit[caseType[bid]] = rate
	}
	t.Logf("prefix cache hit rate: affinity-only %.3f, load-only %.3f, router-neutral %.3f", hit["affinity-only"], hit["load-only"], hit["router-neutral"])
	if len(hit) != 3 {
		t.Fatalf("comparisons for %v, want the three baselines", hit)
	}
	if hit["affinity-only"] <= hit["load-only"] || hit["affinity-only"] <= hit["router-neutral"] {
		t.Errorf("affinity-only must hit the prefix cache more than load-only and router-neutral: %v", hit)
	}

	waitWorkflow(t, api, id, time.Minute, "cleaned up", allCleaned)
	eventually(t, 30*time.Second, "no simulator or router left", func() bool { return simulatorsRunning(binDir) == 0 })
	code, execs := get(t, base+"/api/v1/deployments/executions?deployment_ownership=evaluation")
	if code != 200 || !strings.Contains(execs, `"total":0`) {
		t.Fatalf("evaluation executions left: %d %s", code, execs)
	}
}

// decisionProfile is the profile label of the first routing decision a router at base has
// counted ("" before its first decision, or when it does not answer).
func decisionProfile(base string) string {
	resp, body, err := fetch(base + "/metrics")
	if err != nil || resp.StatusCode != 200 {
		return ""
	}
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, `inference_router_routing_decisions_total{profile="`)
		if !ok {
			continue
		}
		if p, _, ok := strings.Cut(rest, `"`); ok {
			return p
		}
	}
	return ""
}
