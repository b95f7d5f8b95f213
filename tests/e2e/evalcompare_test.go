package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// comparisonOf is the report's comparison of guide case guide against baseline case baseline.
func comparisonOf(t *testing.T, wf map[string]any, guide, baseline string) map[string]any {
	t.Helper()
	report, _ := wf["report"].(map[string]any)
	comparisons, _ := report["comparisons"].([]any)
	for _, c := range comparisons {
		if m := c.(map[string]any); m["guide_case_id"] == guide && m["baseline_case_id"] == baseline {
			return m
		}
	}
	t.Fatalf("no comparison of %s against %s in %v", guide, baseline, report)
	return nil
}

// An evaluation of like-for-like configurations: two simulator replicas as the guide against the
// direct-vllm baseline, which deploys the same two replicas with the same simulator flags, on the
// identical benchmark. A second plan gives its direct-vllm baseline one replica, so its parity
// fails, naming both values.
func TestEvaluationOfIdenticalConfigurations(t *testing.T) {
	stack, binDir := workflowStackOf(t)
	base, api := stack.APIURL, stack.APIURL+"/api/v1/evaluate"
	// Latencies with a spread of their own (TTFT 200 ms and 50 ms per token, each +-30 %), long
	// enough that the shared test host's drift between the guide's and the baseline's minutes
	// (a millisecond or two of scheduling delay) stays well inside the requests' own noise.
	cfg := configuration(t, base, "baseline-vllm", `{"model":{"name":"sim-model"},"decode":{"replicas":2},`+
		`"simulator":{"time-to-first-token":"200ms","time-to-first-token-std-dev":"60ms","inter-token-latency":"50ms","inter-token-latency-std-dev":"15ms"}}`)
	bench := `"benchmark":{"matrix":[{"isl":32,"osl":4}],"warmup_requests":1,"concurrency_stages":[{"concurrency":2,"num_requests":16}]},` +
		`"sla_targets":{"ttft_ms":2000,"ttft_percentile":"p90","success_rate_min_percent":99}`
	// Three repetitions of every case, set once for the whole evaluation, and 99.9 % intervals:
	// at 95 % each of the eight metrics would be called better or worse in one like-for-like
	// evaluation in twenty, some metric in one in ten (runtime/comparison's
	// TestIntervalsHoldTheirConfidence); at 99.9 % hardly ever, unless the intervals are too narrow.
	body := `{"name":"identical","cluster_session_id":"` + stack.LocalSessionID + `","repetitions":3,"confidence":0.999,"benchmark_plans":[` +
		`{"id":"same","configuration_artifact_id":"` + cfg + `","baseline_types":["direct-vllm"],` + bench + `},` +
		`{"id":"smaller-baseline","configuration_artifact_id":"` + cfg + `","baseline_types":["direct-vllm"],` +
		`"baseline_parameters":{"direct-vllm":{"replicas":1}},` + bench + `}]}`
	id := createEvaluation(t, api, body)["id"].(string)
	// Cleanup runs after the workflow finishes: wait for it, so no replica outlives the stack.
	defer func() {
		waitWorkflow(t, api, id, time.Minute, "cleaned up", allCleaned)
		eventually(t, 30*time.Second, "no simulator or router left", func() bool { return simulatorsRunning(binDir) == 0 })
	}()
	wf := waitWorkflow(t, api, id, 4*time.Minute, "finished", workflowFinished)
	if wf["status"] != "succeeded" {
		t.Fatalf("evaluation ended %v: %v (cases %v)", wf["status"], wf["error"], wf["cases"])
	}

	same := comparisonOf(t, wf, "guide-1", "baseline-1")
	if p := same["parity"].(map[string]any); p["valid"] != true || len(p["reasons"].([]any)) != 0 {
		t.Errorf("like-for-like parity %v", p)
	}
	smaller := comparisonOf(t, wf, "guide-2", "baseline-2")
	p := smaller["parity"].(map[string]any)
	reasons := mustJSON(p["reasons"])
	if p["valid"] != false || !strings.Contains(reasons, "accelerator count differs: guide 2, baseline 1") {
		t.Errorf("parity against a one-replica baseline %v", p)
	}
	if strings.Contains(reasons, "workload") || strings.Contains(reasons, "accelerator type") {
		t.Errorf("only the accelerator count differs: %s", reasons)
	}

	// Identical configurations: no metric differs significantly, and each interval holds 1.
	sig, ok := same["significance"].(map[string]any)
	if !ok || sig["guide_repetitions"] != 3.0 || sig["baseline_repetitions"] != 3.0 || sig["confidence"] != 0.999 || wf["confidence"] != 0.999 {
		t.Fatalf("significance %v", same["significance"])
	}
	metrics := sig["metrics"].(map[string]any)
	if len(metrics) != 8 {
		t.Errorf("significance of %d metrics, want 8: %v", len(metrics), metrics)
	}
	for name, v := range metrics {
		m := v.(map[string]any)
		if name != "error_rate" && m["method"] != "welch-t" {
			t.Errorf("%s: method %v with three repetitions a side", name, m["method"])
		}
		if m["verdict"] != "no significant difference" {
			t.Errorf("%s: %v (ratio %v in [%v, %v])", name, m["verdict"], m["ratio"], m["ratio_ci_low"], m["ratio_ci_high"])
		}
	}
	// The guide's metrics carry the spread of its repetitions; its SLA verdict the margin and
	// how many repetitions met each target.
	gm := same["guide_metrics"].(map[string]any)
	if spread, _ := gm["repetition_spread"].(map[string]any); gm["repetitions"] != 3.0 || spread["ttft_ms"] == nil {
		t.Errorf("guide repetitions %v, spread %v", gm["repetitions"], gm["repetition_spread"])
	}
	sla := same["sla"].(map[string]any)
	ttft := sla["checks"].(map[string]any)["ttft"].(map[string]any)
	if sla["met"] != true || sla["repetitions_met"] != 3.0 || ttft["repetitions_met"] != 3.0 || ttft["repetitions"] != 3.0 ||
		ttft["margin"].(float64) < 1500 || ttft["margin_percent"].(float64) < 75 {
		t.Errorf("sla %v", sla)
	}
	// A workflow's runs name the configuration they benchmarked, the endpoint their traffic went
	// to and the workflow's owner (null: the stack runs without authentication).
	if owner, ok := wf["owner_user_id"]; !ok || owner != nil {
		t.Errorf("workflow owner_user_id %v (present %v)", owner, ok)
	}
	for _, c := range wf["cases"].([]any) {
		cs := c.(map[string]any)
		run := getRun(t, api, cs["evaluation_run_id"].(string))
		if len(run["repetition_results"].([]any)) != 3 || len(run["bootstrap"].(map[string]any)["repetitions"].([]any)) != 3 {
			t.Errorf("run of %v: repetition_results %v", cs["id"], run["repetition_results"])
		}
		conf, _ := run["configuration"].(map[string]any)
		if conf == nil || conf["model"] != "sim-model" || conf["replicas"] == nil || conf["guide"] != "baseline-vllm" || conf["benchmark"] == nil {
			t.Errorf("run of %v: configuration %v", cs["id"], run["configuration"])
		}
		if run["endpoint_used"] != cs["endpoint"] || run["endpoint_used"] == nil || run["deployment_case_id"] != cs["id"] {
			t.Errorf("run of %v: endpoint_used %v (case endpoint %v), deployment_case_id %v", cs["id"], run["endpoint_used"], cs["endpoint"], run["deployment_case_id"])
		}
		if b := run["benchmark"].(map[string]any); b["repetitions"] != 3.0 || b["harness"] != "inference-perf" {
			t.Errorf("run of %v: benchmark %v", cs["id"], b)
		}
		if _, ok := run["owner_user_id"]; !ok {
			t.Errorf("run of %v has no owner_user_id", cs["id"])
		}
	}
}
