package evaluationapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/inventory"
)

// TestSettingsTheLoadGeneratorCannotHonourAreRefused: benchmark_source other than the
// defaults, a proxy, a storage class, another harness and a specification_file that is not the
// target's guide are refused with a 422 naming the field; the spec's own example values (empty
// proxies, the default source, the guide the execution was deployed from) are accepted.
func TestSettingsTheLoadGeneratorCannotHonourAreRefused(t *testing.T) {
	h := start(t)
	inv := &inventory.Repo{Store: h.deps.Store, Sealer: h.runs.Sealer}
	if err := inv.PutExecution(context.Background(), inventory.Execution{ID: "exec-guide", ClusterSessionID: "s-1", Name: "guide",
		Model: "m-1", Endpoint: "http://127.0.0.1:2/v1", Ownership: inventory.OwnershipEvaluation, ProviderRef: "optimized-baseline"}, ""); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ body, field, says string }{
		"repository":      {`"benchmark_source":{"repository":"https://example.invalid/fork.git","revision":"main"}`, `"benchmark_source","repository"`, "fetches no benchmark repository"},
		"revision":        {`"benchmark_source":{"revision":"v0.3.0"}`, `"benchmark_source","revision"`, "fetches no benchmark revision"},
		"http_proxy":      {`"http_proxy":"http://proxy.internal:3128"`, `"http_proxy"`, "egress policy"},
		"https_proxy":     {`"https_proxy":"http://proxy.internal:3128"`, `"https_proxy"`, "egress policy"},
		"no_proxy":        {`"no_proxy":"localhost"`, `"no_proxy"`, "egress policy"},
		"storage class":   {`"storage_class_name":"fast-ssd"`, `"storage_class_name"`, "results volume"},
		"harness":         {`"harness":"vllm-benchmark"`, `"harness"`, "inference-perf only"},
		"unknown guide":   {`"specification_file":"guides/wide-ep"`, `"specification_file"`, "names no guide"},
		"existing target": {`"specification_file":"guides/optimized-baseline","deployment_execution_id":"exec-1"`, `"specification_file"`, "existing endpoint"},
		"another guide":   {`"specification_file":"guides/pd-disaggregation"`, `"specification_file"`, "deployed from optimized-baseline"},
	} {
		body := `{"deployment_execution_id":"exec-guide",` + tc.body + `}`
		if strings.Contains(tc.body, "deployment_execution_id") {
			body = `{` + tc.body + `}`
		}
		var prob map[string]any
		code := call(t, "POST", h.url+"/runs", body, &prob)
		if got := toJSON(prob); code != 422 || !strings.Contains(got, tc.field) || !strings.Contains(got, tc.says) {
			t.Errorf("%s: %d %s, want 422 naming %s", name, code, got, tc.field)
		}
	}
	// The spec's example values.
	var run map[string]any
	if code := call(t, "POST", h.url+"/runs", `{"deployment_execution_id":"exec-guide","harness":"inference-perf",
		"specification_file":"guides/optimized-baseline","http_proxy":"","https_proxy":"","no_proxy":"","storage_class_name":null,
		"benchmark_source":{"repository":"https://github.com/llm-d/llm-d-benchmark.git","revision":"main"}}`, &run); code != 202 {
		t.Fatalf("the spec's example: %d %v", code, run)
	}
	// An evaluation's runtime proxies and benchmark_source are held to the same rule.
	var prob map[string]any
	if code := call(t, "POST", h.url+"/evaluations", `{"cluster_session_id":"s-1","runtime":{"https_proxy":"http://p:1"},
		"benchmark_source":{"revision":"v1"},"benchmark_plans":[{"configuration_artifact_id":"c-1"}]}`, &prob); code != 422 ||
		!strings.Contains(toJSON(prob), `"runtime","https_proxy"`) || !strings.Contains(toJSON(prob), `"benchmark_source","revision"`) {
		t.Fatalf("evaluation: %d %s", code, toJSON(prob))
	}
}
