package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// An evaluation on the engine model sees mechanisms: the guide serves Llama-2-7B on one
// replica, the direct-vllm baseline on two, both with max_num_seqs 8, under a load one replica
// cannot batch without queueing. The report shows the guide's TTFT well above the baseline's,
// as the engine predicts, and names queueing as what drives the difference.
func TestEngineModelEvaluationNamesTheMechanism(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys and benchmarks two configurations in real time")
	}
	stack, binDir := workflowStackOf(t)
	base, api := stack.APIURL, stack.APIURL+"/api/v1/evaluate"
	cfg := configuration(t, base, "baseline-vllm", `{"model":{"name":"meta-llama/Llama-2-7b-hf"},"decode":{"replicas":1,"max_num_seqs":8,"max_model_len":4096},`+
		`"simulator":{"latency-calculator":"engine","hardware":"H100-SXM-80GB","max-num-batched-tokens":2048}}`)
	bench := `"benchmark":{"shared_prefix":{"num_groups":4,"num_prompts_per_group":5,"system_prompt_len":100,"question_len":400,` +
		`"output_len":100,"stages":[{"rate":12,"duration":15}]}}`
	body := `{"name":"replicas","cluster_session_id":"` + stack.LocalSessionID + `","benchmark_plans":[` +
		`{"id":"one-vs-two","configuration_artifact_id":"` + cfg + `","baseline_types":["direct-vllm"],` +
		`"baseline_parameters":{"direct-vllm":{"replicas":2}},` + bench + `}]}`
	id := createEvaluation(t, api, body)["id"].(string)
	// Cleanup runs after the workflow finishes: wait for it, so no replica outlives the stack.
	defer func() {
		waitWorkflow(t, api, id, time.Minute, "cleaned up", allCleaned)
		eventually(t, 30*time.Second, "no simulator or router left", func() bool { return simulatorsRunning(binDir) == 0 })
	}()
	wf := waitWorkflow(t, api, id, 5*time.Minute, "finished", workflowFinished)
	if wf["status"] != "succeeded" {
		t.Fatalf("evaluation ended %v: %v (cases %v)", wf["status"], wf["error"], wf["cases"])
	}
	c := comparisonOf(t, wf, "guide-1", "baseline-1")
	gm, bm := c["guide_metrics"].(map[string]any), c["baseline_metrics"].(map[string]any)
	gTTFT, _ := gm["ttft_ms"].(float64)
	bTTFT, _ := bm["ttft_ms"].(float64)
	if !(gTTFT > 2*bTTFT) {
		t.Errorf("TTFT %.1f ms on one replica against %.1f ms on two: the queue should show", gTTFT, bTTFT)
	}
	mechs, _ := c["mechanisms"].([]any)
	t.Logf("TTFT %.1f ms (one replica) against %.1f ms (two); mechanisms %s", gTTFT, bTTFT, mustJSON(mechs))
	if len(mechs) == 0 {
		t.Fatalf("no mechanism named; mechanism metrics %v against %v", gm["mechanism_metrics"], bm["mechanism_metrics"])
	}
	first := mechs[0].(map[string]any)
	if first["mechanism"] != "queueing" || !strings.Contains(first["says"].(string), "waiting") {
		t.Errorf("the first mechanism is %v, want queueing: all %v", first, mechs)
	}
	if gq, _ := first["guide"].(float64); gq < 1 {
		t.Errorf("the guide's mean queue %v", first["guide"])
	}
}
