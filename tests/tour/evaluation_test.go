package tour_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// TestTheReadmeEvaluationTour runs the README's "The evaluation tour" block literally (only
// the API's and the simulator's addresses replaced by free ones) against bin/lensfn-local
// started as `make run` starts it, on a fresh data dir with a dataset mirror that refuses every
// connection, and checks what each step printed and left behind: the Model Service over the
// stack's simulator, the benchmark run with its SLA verdict, an evaluation whose two
// configurations the local provider deployed, benchmarked, compared and cleaned up, and the
// report file.
func TestTheReadmeEvaluationTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every function and runs the whole stack")
	}
	need(t, "bash", "curl", "jq")
	block := tourBlock(t, "## The evaluation tour")
	for _, literal := range []string{"BASE=" + readmeAPI + " ", `endpoint: "` + readmeSim + `"`, `model: "fake-model"`,
		"provider_ref: $provider", "/artifacts/report-html"} {
		if !strings.Contains(block, literal) {
			t.Fatalf("the evaluation tour no longer says %s", literal)
		}
	}
	bin := build(t)
	modules := wasmtest.BuiltinDir(t)
	dataDir := t.TempDir()
	if err := os.Symlink(wasmtest.CacheDir(t), filepath.Join(dataDir, "cache")); err != nil {
		t.Fatal(err)
	}
	closed := freeAddr(t) // nothing listens there: nothing may need the internet
	s := startStack(t, bin, modules, dataDir, freeAddr(t), freeAddr(t), "http://"+closed)
	if s.model != "fake-model" {
		t.Fatalf("the simulator serves %s; the tour uses fake-model", s.model)
	}

	work := t.TempDir()
	docs := jsonValues(t, runTour(t, s, block, work))

	// 1. The Model Service over the stack's simulator, healthy at once.
	services := find(docs, "active_member_execution_id")
	if len(services) != 1 || services[0]["status"] != "available" || services[0]["active_member_execution_id"] == nil {
		t.Fatalf("model service: %v", services)
	}
	raw, err := os.ReadFile(filepath.Join(work, "model-service.json"))
	if err != nil || !strings.Contains(string(raw), `"access_key"`) {
		t.Fatalf("model-service.json: %v %s", err, raw)
	}

	// 2. The run through the Model Service, its SLA verdict and headline numbers.
	var run map[string]any
	for _, d := range find(docs, "metrics") {
		if _, ok := d["sla"]; ok {
			run = d
		}
	}
	if run == nil || run["status"] != "succeeded" {
		t.Fatalf("run: %v", docs)
	}
	sla, _ := run["sla"].(map[string]any)
	checks, _ := sla["checks"].(map[string]any)
	if _, ok := sla["met"].(bool); !ok || checks["ttft"] == nil {
		t.Fatalf("run sla: %v", run["sla"])
	}
	metrics := run["metrics"].(map[string]any)
	if metrics["request_count"] != 40.0 || metrics["success_rate"] != 100.0 || metrics["ttft_ms"] == nil || metrics["throughput_rps"].(float64) <= 0 {
		t.Fatalf("run metrics: %v", metrics)
	}

	// 4. The evaluation: both configurations succeeded; the two replicas met the SLA and the
	// single replica, queueing half the load, did not; the topology ratios say the same, as the
	// README's paragraph under the block does.
	finals := find(docs, "two_over_one")
	if len(finals) != 1 || finals[0]["status"] != "succeeded" {
		t.Fatalf("evaluation: %v", finals)
	}
	verdicts, _ := finals[0]["sla"].([]any)
	if len(verdicts) != 2 {
		t.Fatalf("evaluation sla: %v", finals[0]["sla"])
	}
	two, one := verdicts[0].(map[string]any), verdicts[1].(map[string]any)
	if two["guide"] != "optimized-baseline" || one["guide"] != "baseline-vllm" {
		t.Fatalf("evaluation sla: %v", verdicts)
	}
	if one["met"] != false || two["ttft_p90_ms"].(float64) >= one["ttft_p90_ms"].(float64) {
		t.Errorf("the single replica should queue and miss the SLA: %v", verdicts)
	}
	if two["met"] != true {
		t.Errorf("the two replicas should meet the SLA (p90 TTFT 200 ms): %v", two)
	}
	topo, _ := finals[0]["two_over_one"].([]any)
	if len(topo) != 1 {
		t.Fatalf("topology comparisons: %v", finals[0]["two_over_one"])
	}
	ratio := topo[0].(map[string]any)["ratio"].(map[string]any)
	if ratio["throughput_rps"].(float64) < 1.3 || ratio["ttft_ms"].(float64) > 0.7 {
		t.Errorf("two replicas over one: %v", ratio)
	}

	// The workflow deployed both with the local provider and cleaned them up.
	wf := newestWorkflow(t, s)
	cases, _ := wf["cases"].([]any)
	if len(cases) != 2 {
		t.Fatalf("cases: %v", wf["cases"])
	}
	for _, c := range cases {
		cs := c.(map[string]any)
		if cs["provider"] != "local" || cs["status"] != "succeeded" {
			t.Errorf("case %v: provider %v, status %v", cs["id"], cs["provider"], cs["status"])
		}
	}

	// 5. The report, where the tour said it would be.
	page, err := os.ReadFile(filepath.Join(work, wf["id"].(string)+"-report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), "<svg") ||
		!strings.Contains(string(page), "guide-2") {
		t.Fatalf("the report is not the comparison page:\n%.600s", page)
	}
}

// newestWorkflow is the newest evaluation workflow of the stack.
func newestWorkflow(t *testing.T, s *stack) map[string]any {
	t.Helper()
	resp, err := http.Get(s.api + "/api/v1/evaluate/workflow-runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Items) != 1 {
		t.Fatalf("workflow list: %v %d items", err, len(list.Items))
	}
	return list.Items[0]
}
