package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// artifacts is a configuration source over fixed artifacts.
type artifacts map[string]inventory.Configuration

func (a artifacts) get(_ context.Context, id string) (inventory.Configuration, error) {
	c, ok := a[id]
	if !ok {
		return c, problem.New(problem.CodeNotFound, "configuration %s not found", id)
	}
	return c, nil
}

func artifact(id, provider, content string) inventory.Configuration {
	sum, _ := inventory.Checksum(json.RawMessage(content))
	return inventory.Configuration{ID: id, Name: id, SchemaVersion: inventory.ConfigurationSchemaV1, Type: "guide",
		Format: inventory.ConfigurationFormat, ProviderRef: provider, Content: json.RawMessage(content), Checksum: sum,
		Provenance: json.RawMessage(`{}`)}
}

var fixtures = artifacts{
	"opt":  artifact("opt", "optimized-baseline", `{"model":{"name":"m"},"decode":{"replicas":4},"simulator":{"block-size":16,"enable-kvcache":true}}`),
	"opt2": artifact("opt2", "optimized-baseline", `{"model":{"name":"m"},"decode":{"replicas":4},"simulator":{"block-size":16,"enable-kvcache":true}}`),
	"pd":   artifact("pd", "pd-disaggregation", `{"model":{"name":"m"},"prefill":{"replicas":2,"tensor_parallel_size":1},"decode":{"replicas":2,"tensor_parallel_size":1}}`),
	"pd3":  artifact("pd3", "pd-disaggregation", `{"model":{"name":"m"},"prefill":{"replicas":1,"tensor_parallel_size":1},"decode":{"replicas":2,"tensor_parallel_size":1}}`),
	"vllm": artifact("vllm", "baseline-vllm", `{"model":{"name":"m"},"decode":{"replicas":2}}`),
}

func evaluate(t *testing.T, body string) (*workflow.Workflow, error) {
	t.Helper()
	req, raw, err := workflow.ParseEvaluation([]byte(body))
	if err != nil {
		return nil, err
	}
	if err := workflow.ValidateEvaluation(req); err != nil {
		return nil, err
	}
	return workflow.NewEvaluation(context.Background(), "wf-1", req, raw, fixtures.get)
}

func mustEvaluate(t *testing.T, body string) *workflow.Workflow {
	t.Helper()
	w, err := evaluate(t, body)
	if err != nil {
		t.Fatalf("evaluation refused: %v", err)
	}
	return w
}

func ids(w *workflow.Workflow) []string {
	var out []string
	for _, c := range w.AllCases() {
		out = append(out, c.ID)
	}
	return out
}

func content(t *testing.T, c *workflow.Case) map[string]any {
	t.Helper()
	var cfg struct {
		ProviderRef string         `json:"provider_ref"`
		Content     map[string]any `json:"content"`
	}
	if !get(c, "deployment_configuration", &cfg) {
		t.Fatalf("case %s has no deployment configuration", c.ID)
	}
	cfg.Content["_provider"] = cfg.ProviderRef
	return cfg.Content
}

func wantCode(t *testing.T, err error, code problem.Code, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want %s", code)
	}
	if problem.CodeOf(err) != code {
		t.Fatalf("error %v is %s, want %s", err, problem.CodeOf(err), code)
	}
	if !strings.Contains(err.Error(), substr) && !strings.Contains(detail(err), substr) {
		t.Fatalf("error %q does not mention %q", err.Error()+detail(err), substr)
	}
}

func detail(err error) string {
	var p *problem.Error
	if errors.As(err, &p) {
		b, _ := json.Marshal(p.Detail)
		return string(b)
	}
	return ""
}

func TestDefaultPlanHasOneGuideAndADirectVLLMBaseline(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"id":"candidate","configuration_artifact_id":"opt"}]}`)
	if got := ids(w); !slices.Equal(got, []string{"guide-1", "baseline-1"}) {
		t.Fatalf("cases %v", got)
	}
	g, b := w.AllCases()[0], w.AllCases()[1]
	if g.Status != "queued" || str(g, "deployment_group_id") != "candidate:guide" || str(g, "baseline_case_id") != "baseline-1" {
		t.Fatalf("guide %s", mustJSON(g))
	}
	if str(b, "deployment_group_id") != "candidate:baseline:direct-vllm" || b.BaselineType.Get() != "direct-vllm" {
		t.Fatalf("baseline %s", mustJSON(b))
	}
	c := content(t, b)
	if c["_provider"] != "baseline-vllm" || c["router"] != nil {
		t.Fatalf("direct-vllm deploys %v", c)
	}
	if d := c["decode"].(map[string]any); d["replicas"] != 4.0 || d["tensor_parallel_size"] != 1.0 {
		t.Fatalf("baseline inherits the source's replicas: %v", d)
	}
	var bench map[string]any
	get(b, "benchmark", &bench)
	if bench["baseline_type"] != "direct-vllm" || bench["baseline_parameters"] == nil {
		t.Fatalf("baseline benchmark carries its type and parameters: %v", bench)
	}
	if w.Status != "queued" || str(w, "name") != "Evaluation" || !boolKey(w, "compare_configurations") {
		t.Fatalf("workflow defaults: %s", mustJSON(w))
	}
	var arts map[string]string
	get(w, "configuration_artifacts", &arts)
	if arts["opt"] != fixtures["opt"].Checksum {
		t.Fatalf("configuration_artifacts %v", arts)
	}
}

func TestBaselineTypesMapToProvidersAndProfiles(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt",
		"baseline_types":["direct-vllm","router-round-robin","router-neutral","load-only","affinity-only","optimized-baseline","kubernetes-service"]}]}`)
	// router-round-robin is an alias of router-neutral: one case for both. The kubernetes-service
	// baseline follows its guide at once; independent baselines come after.
	want := []string{"guide-1", "baseline-6", "baseline-1", "baseline-2", "baseline-3", "baseline-4", "baseline-5"}
	if got := ids(w); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	profiles := map[string]string{}
	for _, c := range w.AllCases()[2:] {
		cc := content(t, c)
		profile := ""
		if r, ok := cc["router"].(map[string]any); ok {
			profile = r["profile"].(string)
		}
		profiles[c.BaselineType.Get()] = cc["_provider"].(string) + "/" + profile
	}
	wantProfiles := map[string]string{"direct-vllm": "baseline-vllm/", "router-neutral": "optimized-baseline/random",
		"load-only": "optimized-baseline/load", "affinity-only": "optimized-baseline/prefix-affinity",
		"optimized-baseline": "optimized-baseline/optimized"}
	for k, v := range wantProfiles {
		if profiles[k] != v {
			t.Errorf("%s deploys %s, want %s", k, profiles[k], v)
		}
	}
	ks := w.AllCases()[1]
	if ks.BaselineType.Get() != "kubernetes-service" || str(ks, "dependent_guide_case_id") != "guide-1" || has(ks, "deployment_configuration") && string(raw(ks, "deployment_configuration")) != "null" {
		t.Fatalf("kubernetes-service deploys nothing and names its guide: %s", mustJSON(ks))
	}
	var linked []string
	get(w.AllCases()[0], "baseline_case_ids", &linked)
	if !slices.Equal(linked, []string{"baseline-1", "baseline-2", "baseline-3", "baseline-4", "baseline-5", "baseline-6"}) {
		t.Fatalf("guide links %v", linked)
	}
	// The router profiles of an optimized-baseline source keep its content and change the policy only.
	neutral := content(t, w.Case("baseline-2"))
	if sim, _ := neutral["simulator"].(map[string]any); sim["enable-kvcache"] != true {
		t.Fatalf("router-neutral lost the source's simulator flags: %v", neutral)
	}
}

func TestBaselinesAreDeduplicatedAcrossPlans(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[
		{"id":"a","configuration_artifact_id":"opt","benchmark":{"workload":"sanity_random.yaml"}},
		{"id":"b","configuration_artifact_id":"opt2","benchmark":{"workload":"sanity_random.yaml"}},
		{"id":"c","configuration_artifact_id":"opt2","benchmark":{"workload":"chatbot_synthetic.yaml"}}]}`)
	// a and b derive the same direct-vllm deployment with the same benchmark: one baseline; c
	// runs another workload, so its baseline is its own.
	if got := ids(w); !slices.Equal(got, []string{"guide-1", "guide-2", "guide-3", "baseline-1", "baseline-2"}) {
		t.Fatalf("cases %v", got)
	}
	var wl []string
	get(w.Case("baseline-1"), "workload_ids", &wl)
	if !slices.Equal(wl, []string{"a", "b"}) {
		t.Fatalf("shared baseline serves %v", wl)
	}
	if str(w.Case("guide-2"), "baseline_case_id") != "baseline-1" || str(w.Case("guide-3"), "baseline_case_id") != "baseline-2" {
		t.Fatal("guides link the de-duplicated baselines")
	}
	// kubernetes-service baselines are keyed by their guide: never shared.
	w = mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[
		{"id":"a","configuration_artifact_id":"opt","baseline_types":["kubernetes-service"]},
		{"id":"b","configuration_artifact_id":"opt2","baseline_types":["kubernetes-service"]}]}`)
	if got := ids(w); !slices.Equal(got, []string{"guide-1", "baseline-1", "guide-2", "baseline-2"}) {
		t.Fatalf("kubernetes-service cases %v", got)
	}
}

func TestScenariosNameGuidesAndWorkloads(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"id":"p","configuration_artifact_id":"opt",
		"scenarios":[{"id":"short","name":"Short","benchmark":{"workload":"sanity_random.yaml"}},{"id":"long","benchmark":{"workload":"chatbot_synthetic.yaml"}}]}]}`)
	if got := ids(w); !slices.Equal(got, []string{"guide-1-1", "guide-1-2", "baseline-1", "baseline-2"}) {
		t.Fatalf("cases %v", got)
	}
	g := w.Case("guide-1-2")
	var wl []string
	get(g, "workload_ids", &wl)
	if !slices.Equal(wl, []string{"p--long"}) || str(g, "scenario_id") != "long" || str(g, "scenario_name") != "long" {
		t.Fatalf("scenario guide %s", mustJSON(g))
	}
	if str(w.Case("guide-1-1"), "scenario_name") != "Short" {
		t.Fatal("scenario name")
	}
}

func TestPDBudgetRule(t *testing.T) {
	cases := []struct {
		pr, ptp, dr, dtp, btp, want int
		ok                          bool
	}{
		{2, 1, 2, 1, 1, 4, true},  // 2P2D at TP=1: four replicas
		{2, 1, 2, 1, 2, 2, true},  // or two at baseline TP=2
		{1, 2, 2, 4, 2, 5, true},  // (2 + 8) / 2
		{1, 1, 2, 1, 2, 0, false}, // 3 / 2 is not exact: no rounding
		{16, 2, 16, 2, 1, 0, false},
		{16, 1, 16, 1, 1, 32, true}, // exactly the cap
		{0, 1, 2, 1, 1, 0, false},   // dimensions must be positive
		{1, 1, 1, 1, 0, 0, false},
		{1, 1, 1, -1, 1, 0, false},
	}
	for _, c := range cases {
		got, err := workflow.PDBaselineReplicas(c.pr, c.ptp, c.dr, c.dtp, c.btp)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("%+v: got %d, %v", c, got, err)
		}
		if !c.ok && (err == nil || problem.CodeOf(err) != problem.CodeConflict) {
			t.Errorf("%+v: got %d, %v; want a 409", c, got, err)
		}
	}
}

func TestPDBaselinesMatchTheBudget(t *testing.T) {
	decode := func(w *workflow.Workflow, id string) map[string]any {
		return content(t, w.Case(id))["decode"].(map[string]any)
	}
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd"}]}`)
	if d := decode(w, "baseline-1"); d["replicas"] != 4.0 || d["tensor_parallel_size"] != 1.0 {
		t.Fatalf("2P2D TP1 baseline %v, want 4 replicas at TP 1", d)
	}
	if c := content(t, w.Case("baseline-1")); c["prefill"] != nil {
		t.Fatalf("a plain baseline has no prefill pool: %v", c)
	}
	w = mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd",
		"baseline_parameters":{"direct-vllm":{"tensor_parallel_size":2}}}]}`)
	if d := decode(w, "baseline-1"); d["replicas"] != 2.0 || d["tensor_parallel_size"] != 2.0 {
		t.Fatalf("TP-only override recalculates: %v", d)
	}
	w = mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd3",
		"baseline_parameters":{"direct-vllm":{"tensor_parallel_size":2,"replicas":1}}}]}`)
	if d := decode(w, "baseline-1"); d["replicas"] != 1.0 {
		t.Fatalf("explicit replicas win (unequal budget allowed): %v", d)
	}
	_, err := evaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd3",
		"baseline_parameters":{"direct-vllm":{"tensor_parallel_size":2}}}]}`)
	wantCode(t, err, problem.CodeConflict, "not a multiple")
	// The rule applies to every independent baseline type, and only to P/D sources.
	w = mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd","baseline_types":["load-only"]}]}`)
	if d := decode(w, "baseline-1"); d["replicas"] != 4.0 {
		t.Fatalf("load-only baseline of 2P2D: %v", d)
	}
	w = mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"vllm",
		"baseline_parameters":{"direct-vllm":{"tensor_parallel_size":2}}}]}`)
	if d := decode(w, "baseline-1"); d["replicas"] != 2.0 || d["tensor_parallel_size"] != 2.0 {
		t.Fatalf("non-P/D sources inherit replicas: %v", d)
	}
}

func TestBaselineParametersApply(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt",
		"baseline_parameters":{"direct-vllm":{"replicas":3,"max_model_len":4096,"max_num_seqs":64,"block_size":32,
		"gpu_memory_utilization":0.8,"max_num_batched_tokens":2048}}}]}`)
	b := w.Case("baseline-1")
	c := content(t, b)
	d := c["decode"].(map[string]any)
	if d["replicas"] != 3.0 || d["max_model_len"] != 4096.0 || d["max_num_seqs"] != 64.0 {
		t.Fatalf("decode %v", d)
	}
	if sim := c["simulator"].(map[string]any); sim["block-size"] != 32.0 {
		t.Fatalf("block_size goes to the simulator's block-size: %v", sim)
	}
	var custom []map[string]string
	get(b, "custom_parameters", &custom)
	names := []string{}
	for _, p := range custom {
		if p["target"] != "decode" || p["kind"] != "argument" {
			t.Fatalf("custom parameter %v", p)
		}
		names = append(names, p["name"]+"="+p["value"])
	}
	if !slices.Equal(names, []string{"gpu-memory-utilization=0.8", "block-size=32", "max-num-batched-tokens=2048"}) {
		t.Fatalf("custom parameters %v", names)
	}
	var params map[string]any
	get(b, "baseline_parameters", &params)
	if params["replicas"] != 3.0 || len(params) != 6 {
		t.Fatalf("baseline_parameters without nulls: %v", params)
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name, body string
		code       problem.Code
		mention    string
	}{
		{"no plans", `{"cluster_session_id":"s","benchmark_plans":[]}`, problem.CodeValidation, "benchmark_plans"},
		{"no session", `{"benchmark_plans":[{"configuration_artifact_id":"opt"}]}`, problem.CodeValidation, "cluster_session_id"},
		{"unknown field", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","colour":1}]}`, problem.CodeValidation, "colour"},
		{"unknown type", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_types":["magic"]}]}`, problem.CodeValidation, "magic"},
		{"eight types", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_types":["direct-vllm","direct-vllm","direct-vllm","direct-vllm","direct-vllm","direct-vllm","direct-vllm","direct-vllm"]}]}`, problem.CodeValidation, "at most 7"},
		{"nothing to run", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","include_configuration":false,"include_baseline":false}]}`, problem.CodeValidation, "at least one"},
		{"replicas 33", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_parameters":{"direct-vllm":{"replicas":33}}}]}`, problem.CodeValidation, "replicas"},
		{"tp 17", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_parameters":{"direct-vllm":{"tensor_parallel_size":17}}}]}`, problem.CodeValidation, "tensor_parallel_size"},
		{"gpu 1.5", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_parameters":{"direct-vllm":{"gpu_memory_utilization":1.5}}}]}`, problem.CodeValidation, "gpu_memory_utilization"},
		{"block 0", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_parameters":{"direct-vllm":{"block_size":0}}}]}`, problem.CodeValidation, "block_size"},
		{"parameters of unknown type", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_parameters":{"magic":{}}}]}`, problem.CodeValidation, "magic"},
		{"duplicate plan ids", `{"cluster_session_id":"s","benchmark_plans":[{"id":"a","configuration_artifact_id":"opt"},{"id":"a","configuration_artifact_id":"opt"}]}`, problem.CodeValidation, "unique"},
		{"bad benchmark", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","benchmark":{"parallelism":99}}]}`, problem.CodeValidation, "parallelism"},
		{"unknown artifact", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"nope"}]}`, problem.CodeNotFound, "nope"},
		{"kubernetes-service without its guide", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","include_configuration":false,"baseline_types":["kubernetes-service"]}]}`, problem.CodeConflict, "full configuration"},
		{"kubernetes-service of a P/D guide", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd","baseline_types":["kubernetes-service"]}]}`, problem.CodeConflict, "kubernetes-service"},
		{"P/D budget not exact", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd3","baseline_parameters":{"direct-vllm":{"tensor_parallel_size":2}}}]}`, problem.CodeConflict, "multiple"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := evaluate(t, c.body)
			wantCode(t, err, c.code, c.mention)
		})
	}
}

func TestBaselinesOnlyPlan(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","include_configuration":false,"baseline_types":["direct-vllm","load-only"]}]}`)
	if got := ids(w); !slices.Equal(got, []string{"baseline-1", "baseline-2"}) {
		t.Fatalf("cases %v", got)
	}
	w = mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","include_baseline":false}]}`)
	if got := ids(w); !slices.Equal(got, []string{"guide-1"}) || string(raw(w.Case("guide-1"), "baseline_case_id")) != "null" {
		t.Fatalf("cases %v", got)
	}
}

func TestStoredFieldsSurviveARoundTrip(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","name":"N","benchmark_plans":[{"configuration_artifact_id":"opt"}]}`)
	setKey(w.Case("guide-1"), "future_field", map[string]int{"x": 1})
	w.Extra = map[string]json.RawMessage{"another": json.RawMessage("null")}
	w.Internal.IdempotencyKey = "k"
	doc, err := workflow.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	back, err := workflow.Unmarshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw(back.Case("guide-1"), "future_field")) != `{"x":1}` || string(raw(back, "another")) != "null" || back.Internal.IdempotencyKey != "k" {
		t.Fatalf("lost fields: %s", doc)
	}
	public, _ := json.Marshal(back)
	if strings.Contains(string(public), "_internal") || strings.Contains(string(public), `"k"`) {
		t.Fatalf("public document shows internals: %s", public)
	}
}

func TestTransitionTables(t *testing.T) {
	allowed := map[string][]string{
		"queued":       {"deploying", "running", "cancelling", "failed"},
		"deploying":    {"benchmarking", "cancelling", "failed"},
		"running":      {"succeeded", "cancelling", "cancelled", "failed"},
		"benchmarking": {"succeeded", "cancelling", "cancelled", "failed"},
		"cancelling":   {"cancelled", "failed"},
		"succeeded":    {},
		"failed":       {"queued"},
		"cancelled":    {"queued"},
	}
	for _, from := range workflow.Statuses {
		for _, to := range workflow.Statuses {
			want := from == to || slices.Contains(allowed[from], to)
			if got := workflow.CanTransition(from, to); got != want {
				t.Errorf("workflow %s -> %s: %v, want %v", from, to, got, want)
			}
		}
	}
	if !workflow.NoWayOut("succeeded") || workflow.NoWayOut("failed") || !workflow.Terminal("failed") || workflow.Terminal("cancelling") {
		t.Error("terminal sets")
	}
	if got := workflow.Sources("queued"); !slices.Equal(got, []string{"failed", "cancelled"}) {
		t.Errorf("sources of queued %v", got)
	}
	caseAllowed := map[string][]string{
		"queued":       {"deploying", "benchmarking", "failed", "cancelled", "cancelling"},
		"deploying":    {"benchmarking", "failed", "cancelled", "cancelling"},
		"benchmarking": {"succeeded", "failed", "cancelled", "cancelling"},
		"succeeded":    {"queued"},
		"failed":       {"queued", "benchmarking"},
		"cancelled":    {"queued"},
		"cancelling":   {"cancelled", "failed"},
	}
	statuses := []string{"queued", "deploying", "benchmarking", "succeeded", "failed", "cancelled", "cancelling"}
	for _, from := range statuses {
		for _, to := range statuses {
			want := from == to || slices.Contains(caseAllowed[from], to)
			if got := workflow.CaseCanTransition(from, to); got != want {
				t.Errorf("case %s -> %s: %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestRetryResetRules(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt","baseline_types":["kubernetes-service","direct-vllm","load-only"]}]}`)
	// guide-1 succeeded but its deployment is gone; its kubernetes-service baseline-1 failed;
	// baseline-2 (direct-vllm) failed on a still-ready deployment; baseline-3 was cancelled.
	set := func(id, status string, kv ...string) {
		c := w.Case(id)
		setKey(c, "status", status)
		for i := 0; i < len(kv); i += 2 {
			setKey(c, kv[i], kv[i+1])
		}
		setKey(c, "cancel_requested", true)
	}
	set("guide-1", "succeeded", "execution_id", "e-guide", "deployment_run_id", "e-guide", "evaluation_run_id", "r-g", "endpoint", "http://g")
	set("baseline-1", "failed", "evaluation_run_id", "r-3", "error", "boom", "execution_id", "e-guide", "endpoint", "http://g/balanced")
	set("baseline-2", "failed", "execution_id", "e-1", "deployment_run_id", "e-1", "evaluation_run_id", "r-1", "error", "boom")
	set("baseline-3", "cancelled", "execution_id", "e-2", "deployment_run_id", "e-2")
	w.Status = "failed"
	w.Error = rawjson.Some("boom")
	w.Report = workflow.ReportJSON(`{"x":1}`)
	w.FinishedAt = rawjson.Some("t")
	ready := func(c *workflow.Case) bool { return str(c, "execution_id") == "e-1" }
	if err := w.Retry(ready, func(*workflow.Case) error { return nil }); err != nil {
		t.Fatal(err)
	}
	g := w.Case("guide-1")
	if g.Status != "queued" || string(raw(g, "execution_id")) != "null" || string(raw(g, "evaluation_run_id")) != "null" || has(g, "endpoint") {
		t.Fatalf("a guide without a ready deployment is requeued for its kubernetes-service baseline: %s", mustJSON(g))
	}
	if b := w.Case("baseline-1"); b.Status != "queued" || string(raw(b, "error")) != "null" || has(b, "endpoint") {
		t.Fatalf("kubernetes-service baseline %s", mustJSON(b))
	}
	if b := w.Case("baseline-2"); b.Status != "benchmarking" || str(b, "execution_id") != "e-1" || string(raw(b, "evaluation_run_id")) != "null" {
		t.Fatalf("a case on a ready deployment benchmarks again on it: %s", mustJSON(b))
	}
	if b := w.Case("baseline-3"); b.Status != "queued" || string(raw(b, "execution_id")) != "null" {
		t.Fatalf("cancelled case requeued: %s", mustJSON(b))
	}
	for _, c := range w.AllCases() {
		if c.CancelRequested.Get() {
			t.Fatalf("%s keeps cancel_requested", c.ID)
		}
	}
	if w.Status != "queued" || string(raw(w, "report")) != "null" || has(w, "finished_at") || string(raw(w, "error")) != "null" {
		t.Fatalf("workflow reset: %s", mustJSON(w))
	}
	// Succeeded cases are kept when their kubernetes-service baseline succeeded too.
	w2 := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt"}]}`)
	setKey(w2.Case("guide-1"), "status", "succeeded")
	setKey(w2.Case("baseline-1"), "status", "failed")
	setKey(w2.Case("baseline-1"), "execution_id", "gone")
	w2.Status = "failed"
	if err := w2.Retry(func(*workflow.Case) bool { return false }, func(*workflow.Case) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if w2.Case("guide-1").Status != "succeeded" || w2.Case("baseline-1").Status != "queued" {
		t.Fatal("succeeded cases are kept")
	}
	// An irreproducible snapshot is a 409, and so is retrying anything but failed/cancelled.
	w2.Status = "failed"
	setKey(w2.Case("baseline-1"), "status", "failed")
	setKey(w2.Case("baseline-1"), "execution_id", "gone")
	err := w2.Retry(func(*workflow.Case) bool { return false }, func(*workflow.Case) error {
		return problem.New(problem.CodeConflict, "snapshot changed")
	})
	wantCode(t, err, problem.CodeConflict, "snapshot")
	w2.Status = "running"
	wantCode(t, w2.Retry(func(*workflow.Case) bool { return false }, func(*workflow.Case) error { return nil }), problem.CodeConflict, "running")
	simple := workflow.NewSimple("s-1", workflow.SimpleRequest{Model: "m", ClusterSessionID: "s"}, "c", "cfg", "e")
	simple.Status = "failed"
	wantCode(t, simple.Retry(func(*workflow.Case) bool { return false }, func(*workflow.Case) error { return nil }), problem.CodeConflict, "no cases")
}

func TestFacts(t *testing.T) {
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"pd","baseline_types":["direct-vllm"]},
		{"configuration_artifact_id":"opt","baseline_types":["kubernetes-service"]}]}`)
	f := w.Facts(w.Case("guide-1"))
	if f["guide"] != "pd-disaggregation" || f["prefill_replicas"] != 2 || f["decode_replicas"] != 2 || f["replicas"] != nil || f["model"] != "m" {
		t.Fatalf("P/D facts %v", f)
	}
	ks := w.Facts(w.Case("baseline-2"))
	if ks["guide"] != "optimized-baseline" || ks["replicas"] != 4 || ks["configuration_artifact_id"] != "opt" {
		t.Fatalf("kubernetes-service baseline has its guide's facts: %v", ks)
	}
	if f["accelerator"] != nil {
		t.Fatalf("an accelerator no one named: %v", f["accelerator"])
	}
	// The accelerator is the one the benchmark says it runs on, for the guide and its baseline.
	named := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"vllm","baseline_types":["direct-vllm"],
		"benchmark":{"accelerator_profile":"nvidia-h100"}}]}`)
	for _, id := range []string{"guide-1", "baseline-1"} {
		if a := named.Facts(named.Case(id))["accelerator"]; a != "nvidia-h100" {
			t.Fatalf("%s accelerator %v", id, a)
		}
	}
}

func TestSimpleWorkflow(t *testing.T) {
	req, err := workflow.ParseSimple([]byte(`{"model":"m","cluster_session_id":"s","replicas":2}`))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	_ = json.Unmarshal(req.Content(), &c)
	if c["decode"].(map[string]any)["replicas"] != 2.0 {
		t.Fatalf("content %v", c)
	}
	w := workflow.NewSimple("id", req, "cl", "cfg", "exec")
	public, _ := json.Marshal(w)
	var doc map[string]any
	_ = json.Unmarshal(public, &doc)
	if doc["status"] != "deploying" || doc["deployment_run_id"] != "exec" || doc["workload"] != "sanity_random.yaml" || doc["cases"] != nil {
		t.Fatalf("simple workflow %s", public)
	}
	stored, _ := workflow.Marshal(w)
	back, _ := workflow.Unmarshal(stored)
	if !back.Simple() || len(back.Cases) != 1 || str(back.AllCases()[0], "execution_id") != "exec" {
		t.Fatalf("simple case lost: %s", stored)
	}
	for _, body := range []string{`{"cluster_session_id":"s"}`, `{"model":"m","cluster_session_id":"s","replicas":0}`, `{"model":"m","cluster_session_id":"s","x":1}`} {
		if _, err := workflow.ParseSimple([]byte(body)); problem.CodeOf(err) != problem.CodeValidation {
			t.Errorf("%s: %v", body, err)
		}
	}
	if _, err := workflow.ParseSimple([]byte(`{"model":"m","cluster_session_id":"s","workload":"nope.yaml"}`)); problem.CodeOf(err) != problem.CodeBadRequest {
		t.Errorf("unknown workload: %v", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var _ = events.TypeWorkflowQueued

// The helpers below read and write a record's document by JSON key, as the stored record and
// the API's answers hold it.

func fields(v any) map[string]json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	return m
}

func raw(v any, key string) json.RawMessage { return fields(v)[key] }

func has(v any, key string) bool { _, ok := fields(v)[key]; return ok }

func str(v any, key string) string {
	var s string
	_ = json.Unmarshal(raw(v, key), &s)
	return s
}

func get(v any, key string, out any) bool {
	r := raw(v, key)
	return len(r) > 0 && string(r) != "null" && json.Unmarshal(r, out) == nil
}

// setKey sets a case's field by its JSON key (v encoded; nil is a null).
func setKey(c *workflow.Case, key string, v any) {
	m := fields(c)
	m[key], _ = json.Marshal(v)
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, c); err != nil {
		panic(err)
	}
}

func boolKey(v any, key string) bool {
	var b bool
	_ = json.Unmarshal(raw(v, key), &b)
	return b
}

// stored reads a testdata record (as a build before the typed records wrote it).
func stored(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// withoutKeys is doc (a JSON object) re-encoded as the store writes it, without keys.
func withoutKeys(t *testing.T, doc []byte, keys ...string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		delete(m, k)
	}
	b, _ := rawjson.Encode(m)
	return string(b)
}

// TestRecordsOfOlderBuildsReadTheSame: records the raw-document builds stored (a retried
// evaluation with explicit nulls, absent fields, a newer build's fields at both levels; a
// simple workflow; a record from before workflows had an internal part; a report of an older
// comparison version; fields of another shape than this build's) decode, answer and store back
// byte for byte as they were.
func TestRecordsOfOlderBuildsReadTheSame(t *testing.T) {
	evaluation := stored(t, "stored-evaluation.json")
	oldReport := bytes.Replace(evaluation, []byte(`"report":null`), []byte(`"report":{"comparison_version":1,"comparisons":[],"old":"x"}`), 1)
	noInternal := []byte(withoutKeys(t, evaluation, "_internal"))
	for name, doc := range map[string][]byte{"evaluation": evaluation, "old report": oldReport, "no internal part": noInternal} {
		w, err := workflow.Unmarshal(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w.Simple() || w.Internal.Kind != workflow.KindEvaluation || len(w.Cases) != 1 {
			t.Fatalf("%s: read as %+v", name, w.Internal)
		}
		public, _ := json.Marshal(w)
		if want := withoutKeys(t, doc, "_internal"); string(public) != want {
			t.Fatalf("%s: answered\n%s\nwant\n%s", name, public, want)
		}
		if name == "no internal part" {
			continue
		}
		back, _ := workflow.Marshal(w)
		if !bytes.Equal(back, doc) {
			t.Fatalf("%s: stored back\n%s\nwant\n%s", name, back, doc)
		}
	}
	w, _ := workflow.Unmarshal(evaluation)
	if string(w.Extra["future"]) != `{"x":[1,null]}` || string(w.Cases[0].Extra["case_future"]) != "null" || !w.Error.Present() ||
		w.Error.Valid() || w.FinishedAt.Present() || w.Cases[0].Attempt.Get() != 1 {
		t.Fatalf("fields read as %+v", w)
	}

	// Fields of another shape than this build's (written by another build) read, and are
	// answered and stored back as they were.
	odd := bytes.Replace(evaluation, []byte(`"attempt":1`), []byte(`"attempt":{"n":1}`), 1)
	odd = bytes.Replace(odd, []byte(`"compare_configurations":true`), []byte(`"compare_configurations":"yes"`), 1)
	if bytes.Equal(odd, evaluation) || bytes.Count(odd, []byte(`"yes"`)) != 1 {
		t.Fatal("the fixture lost the fields the test changes")
	}
	w, err := workflow.Unmarshal(odd)
	if err != nil {
		t.Fatalf("a field of another shape: %v", err)
	}
	if w.Cases[0].Attempt.Present() || w.CompareConfigurations.Present() || w.Cases[0].ID != "guide-1" || w.Name.Get() != "Evaluation" {
		t.Fatalf("read as %+v", w)
	}
	public, _ := json.Marshal(w)
	if want := withoutKeys(t, odd, "_internal"); string(public) != want {
		t.Fatalf("answered\n%s\nwant\n%s", public, want)
	}
	if back, _ := workflow.Marshal(w); !bytes.Equal(back, odd) {
		t.Fatalf("stored back\n%s\nwant\n%s", back, odd)
	}

	simple := stored(t, "stored-simple.json")
	s, err := workflow.Unmarshal(simple)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Simple() || len(s.Cases) != 1 || s.Cases[0].ExecutionID.Get() != "e" {
		t.Fatalf("simple read as %+v", s)
	}
	public, _ = json.Marshal(s)
	if want := withoutKeys(t, simple, "_internal"); string(public) != want {
		t.Fatalf("simple answered\n%s\nwant\n%s", public, want)
	}
	if back, _ := workflow.Marshal(s); !bytes.Equal(back, simple) {
		t.Fatalf("simple stored back\n%s\nwant\n%s", back, simple)
	}
}

// TestRepoKeepsUnknownFieldsThroughAnUpdate: fields a newer build stored, on the workflow and on
// a case, survive a read-modify-write through Repo.Update unchanged.
func TestRepoKeepsUnknownFieldsThroughAnUpdate(t *testing.T) {
	srv, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	store, err := redisstore.Open(ctx, srv.URL(), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	repo := &workflow.Repo{Store: store}
	if err := repo.Create(ctx, mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt"}]}`)); err != nil {
		t.Fatal(err)
	}
	// A newer build writes fields this one does not know.
	rec, err := store.Get(ctx, workflow.Kind, "wf-1")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.Unmarshal(rec.Doc, &doc)
	doc["future_top"] = map[string]any{"nested": []any{1, "two", nil}}
	doc["cases"].([]any)[0].(map[string]any)["future_case"] = "kept"
	rec.Doc, _ = json.Marshal(doc)
	if _, err := store.Update(ctx, rec, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Update(ctx, "wf-1", func(w *workflow.Workflow) error {
		w.Name = rawjson.Some("renamed")
		w.Status = workflow.StatusRunning
		w.Case("guide-1").Status = workflow.CaseDeploying
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rec, _ = store.Get(ctx, workflow.Kind, "wf-1")
	var after map[string]json.RawMessage
	_ = json.Unmarshal(rec.Doc, &after)
	var cases []map[string]json.RawMessage
	_ = json.Unmarshal(after["cases"], &cases)
	if string(after["future_top"]) != `{"nested":[1,"two",null]}` || string(cases[0]["future_case"]) != `"kept"` ||
		string(after["name"]) != `"renamed"` || string(cases[0]["status"]) != `"deploying"` {
		t.Fatalf("after the update: %s", rec.Doc)
	}
	w, _, _ := repo.Get(ctx, "wf-1")
	if public, _ := json.Marshal(w); !strings.Contains(string(public), `"future_top":{"nested":[1,"two",null]}`) ||
		!strings.Contains(string(public), `"future_case":"kept"`) {
		t.Fatalf("answered %s", public)
	}
}

// TestFieldsAreInKeyOrder: Workflow and Case declare their fields in the order of their JSON
// keys, which is what lets a record without Extra encode with the store's sorted keys directly.
func TestFieldsAreInKeyOrder(t *testing.T) {
	for _, v := range []any{workflow.Workflow{}, workflow.Case{}} {
		typ := reflect.TypeOf(v)
		var keys []string
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "-" && name != "" {
				keys = append(keys, name)
			}
		}
		if !slices.IsSorted(keys) {
			t.Errorf("%s: fields out of key order: %v", typ.Name(), keys)
		}
	}
	// A record without Extra, one with only Extra sorting first, and one with Extra among the
	// keys encode as the sorted map of their fields.
	w := mustEvaluate(t, `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"opt"}]}`)
	for _, extra := range []map[string]json.RawMessage{nil, {"Zfirst": json.RawMessage(`{ "a" : 1 }`)},
		{"middle_key": json.RawMessage(`[1, 2]`), "zz": json.RawMessage(`null`)}} {
		w.Extra = extra
		got, _ := json.Marshal(w)
		fields, _ := w.Fields()
		want, _ := rawjson.Encode(fields)
		if !bytes.Equal(got, want) {
			t.Fatalf("extra %v: encoded\n%s\nwant\n%s", extra, got, want)
		}
	}
}
