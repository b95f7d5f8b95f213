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
)

// evaluationStack runs inventory-api, evaluation-api and benchmark-runner and registers a
// simulator with a known latency model (TTFT 40 ms, ITL 5 ms) as a deployment execution of the
// local cluster's session, through inventory-api. It returns the API base, the broker, the
// execution id and a Model Service id with its access key.
func evaluationStack(t *testing.T) (api, broker, execID string, group [2]string, pid func(string) int) {
	t.Helper()
	s := startEvaluationStack(t)
	return s.api, s.stack.BrokerURL, s.execID, s.group, s.stack.PID
}

// evalStack is evaluationStack's stack with what it registered.
type evalStack struct {
	stack  *local.Stack
	api    string // the evaluation API's base
	execID string // the simulator's execution
	group  [2]string
}

func startEvaluationStack(t *testing.T) evalStack {
	t.Helper()
	t.Setenv("POD_IP", "127.0.0.1") // the simulator's KV-event topic names it
	sim := startSimulator(t, "--time-to-first-token", "40ms", "--inter-token-latency", "5ms", "--enable-kvcache", "--kv-cache-size", "4096")
	stack := startStack(t, stackOptions{only: []string{"inventory-api", "evaluation-api", "benchmark-runner"},
		env: map[string]string{"LENS_LEASE_TTL": "3s", "LENS_SWEEP_INTERVAL": "500ms", "LENS_MEMBER_PROBE_INTERVAL": "200ms"}})
	s := evalStack{stack: stack, api: stack.APIURL + "/api/v1/evaluate"}
	s.execID = s.register(t, "e2e-sim", sim)
	svc := `{"name":"e2e","published_name":"` + simModel + `","cluster_session_id":"` + stack.LocalSessionID + `","member_execution_ids":["` + s.execID + `"]}`
	code, body := post(t, stack.APIURL+"/api/v1/model-services", "application/json", svc, nil)
	var g struct {
		ID        string `json:"id"`
		AccessKey string `json:"access_key"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &g) != nil {
		t.Fatalf("publish the simulator: %d %s", code, body)
	}
	s.group = [2]string{g.ID, g.AccessKey}
	return s
}

// register records endpoint (serving simModel) as a deployment execution of the local session.
func (s evalStack) register(t *testing.T, name, endpoint string) string {
	t.Helper()
	reg := `{"cluster_session_id":"` + s.stack.LocalSessionID + `","name":"` + name + `","model":"` + simModel + `","endpoint":"` + endpoint + `"}`
	code, body := post(t, s.stack.APIURL+"/api/v1/deployments/executions", "application/json", reg, nil)
	var exec struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &exec) != nil || exec.ID == "" {
		t.Fatalf("register %s: %d %s", name, code, body)
	}
	return exec.ID
}

func getRun(t *testing.T, api, id string) map[string]any {
	t.Helper()
	code, body := get(t, api+"/runs/"+id)
	if code != 200 {
		t.Fatalf("GET run %s: %d %s", id, code, body)
	}
	var run map[string]any
	if err := json.Unmarshal([]byte(body), &run); err != nil {
		t.Fatal(err)
	}
	return run
}

func waitRun(t *testing.T, api, id string, timeout time.Duration, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var run map[string]any
	eventually(t, timeout, "run "+id, func() bool { run = getRun(t, api, id); return cond(run) })
	return run
}

func isTerminal(run map[string]any) bool {
	s := run["status"]
	return s == "succeeded" || s == "failed" || s == "cancelled"
}

func createRun(t *testing.T, api, body string) string {
	t.Helper()
	code, resp := post(t, api+"/runs", "application/json", body, nil)
	if code != http.StatusAccepted {
		t.Fatalf("POST /runs: %d %s", code, resp)
	}
	var run map[string]any
	_ = json.Unmarshal([]byte(resp), &run)
	return run["id"].(string)
}

func TestEvaluationMatrixBenchmarkAgainstTheSimulator(t *testing.T) {
	api, broker, execID, group, pid := evaluationStack(t)
	sim1 := func(body string) string { return strings.ReplaceAll(body, "sim-1", execID) }

	t.Run("matrix with two concurrency stages and an SLA", func(t *testing.T) {
		id := createRun(t, api, sim1(`{"deployment_execution_id":"sim-1",
			"matrix":[{"isl":64,"osl":16}],"concurrency_stages":[{"concurrency":2,"num_requests":8},{"concurrency":8,"num_requests":24}],
			"warmup_requests":2,"sla_targets":{"ttft_ms":2000,"tpot_ms":200,"success_rate_min_percent":99}}`))
		run := waitRun(t, api, id, 2*time.Minute, isTerminal)
		if run["status"] != "succeeded" {
			t.Fatalf("run ended %v: %v", run["status"], run["error"])
		}
		m := run["metrics"].(map[string]any)
		if m["request_count"] != 32.0 || m["success_count"] != 32.0 || m["success_rate"] != 100.0 {
			t.Fatalf("counts %v/%v, success rate %v", m["success_count"], m["request_count"], m["success_rate"])
		}
		// The simulator's latency model: TTFT 40 ms, 5 ms per further token.
		ttft, tpot := m["ttft_ms"].(float64), m["tpot_ms"].(float64)
		if ttft < 40 || ttft > 40+200 || tpot < 4.5 || tpot > 5+30 {
			t.Fatalf("ttft p50 %.1f ms (model 40), tpot p50 %.1f ms (model 5)", ttft, tpot)
		}
		point := run["matrix_results"].([]any)[0].(map[string]any)
		stages := point["stage_metrics"].([]any)
		if len(stages) != 2 || stages[0].(map[string]any)["metrics"].(map[string]any)["request_count"] != 8.0 ||
			stages[1].(map[string]any)["metrics"].(map[string]any)["request_count"] != 24.0 {
			t.Fatalf("stage metrics %v", stages)
		}
		if sla := run["sla"].(map[string]any); sla["met"] != true {
			t.Fatalf("sla %v", sla)
		}
		if w := run["warmup"].(map[string]any); w["num_requests"] != 2.0 || w["status"] != "succeeded" {
			t.Fatalf("warmup %v", w)
		}
		if code, _ := post(t, api+"/runs/"+id+"/cancel", "application/json", "", nil); code != 409 {
			t.Fatalf("cancel of a succeeded run: %d", code)
		}
	})

	t.Run("shared-prefix rate stages reuse the prefix cache", func(t *testing.T) {
		id := createRun(t, api, sim1(`{"deployment_execution_id":"sim-1","shared_prefix":{"num_groups":2,"num_prompts_per_group":8,
			"system_prompt_len":256,"question_len":16,"output_len":8,"stages":[{"rate":10,"duration":2},{"rate":20,"duration":2}]}}`))
		run := waitRun(t, api, id, 2*time.Minute, isTerminal)
		if run["status"] != "succeeded" {
			t.Fatalf("run ended %v: %v", run["status"], run["error"])
		}
		stages := run["rate_stage_results"].([]any)
		if len(stages) != 2 || run["capacity_analysis"] == nil {
			t.Fatalf("rate stages %v", stages)
		}
		m := run["metrics"].(map[string]any)
		if rate, ok := m["prefix_cache_hit_rate"].(float64); !ok || rate <= 0 {
			t.Fatalf("prefix_cache_hit_rate %v (observability %v)", m["prefix_cache_hit_rate"], m["observability"])
		}
		if m["success_rate"] != 100.0 || run["monitoring"].(map[string]any)["status"] != "available" {
			t.Fatalf("success %v monitoring %v", m["success_rate"], run["monitoring"])
		}
	})

	t.Run("cancel and delete", func(t *testing.T) {
		id := createRun(t, api, sim1(`{"deployment_execution_id":"sim-1","matrix":[{"isl":16,"osl":200}],"warmup_requests":0,
			"concurrency_stages":[{"concurrency":2,"num_requests":2000}]}`))
		waitRun(t, api, id, time.Minute, func(r map[string]any) bool { return r["phase"] == "matrix-0" })
		if code := del(t, api+"/runs/"+id); code != 409 {
			t.Fatalf("delete while running: %d", code)
		}
		asked := time.Now()
		code, body := post(t, api+"/runs/"+id+"/cancel", "application/json", "", nil)
		if code != 200 || !strings.Contains(body, `"cancelled"`) {
			t.Fatalf("cancel: %d %s", code, body)
		}
		if took := time.Since(asked); took > 2*time.Second {
			t.Fatalf("cancel took %s", took)
		}
		if code := del(t, api+"/runs/"+id); code != 204 {
			t.Fatalf("delete: %d", code)
		}
		if code, _ := get(t, api+"/runs/"+id); code != 404 {
			t.Fatalf("deleted run answers %d", code)
		}
	})

	t.Run("run.requested event", func(t *testing.T) {
		data := sim1(`{"idempotency_key":"e2e-nightly","deployment_execution_id":"sim-1","matrix":[{"isl":16,"osl":4}],
			"warmup_requests":0,"concurrency_stages":[{"concurrency":1,"num_requests":3}]}`)
		items := runsFromEvent(t, api, broker, data, map[string]string{"Ce-Id": "ping-1", "Ce-Source": "/lensfn/user/e2e",
			"Ce-Type": "dev.lensfn.evaluation.run.requested.v1"}, `"osl":4`)
		if len(items) != 1 || items[0]["status"] != "succeeded" {
			t.Fatalf("runs from the event: %v", items)
		}
	})

	t.Run("the nightly PingSource example's firing", func(t *testing.T) {
		// The data of deploy/examples/nightly-benchmark.yaml, sent as its PingSource would: type
		// dev.knative.sources.ping with the lensfnevent extension.
		data := sim1(strings.ReplaceAll(pingData(t), "REPLACE-WITH-EXECUTION-ID", "sim-1"))
		items := runsFromEvent(t, api, broker, data, map[string]string{"Ce-Id": "nightly-firing-1",
			"Ce-Source": "/apis/v1/namespaces/lensfn/pingsources/nightly-benchmark", "Ce-Type": "dev.knative.sources.ping",
			"Ce-Time": time.Now().UTC().Format(time.RFC3339), "Ce-Lensfnevent": "dev.lensfn.evaluation.run.requested.v1"}, `"isl":1024`)
		if len(items) != 1 || items[0]["status"] != "succeeded" {
			t.Fatalf("runs from the firing: %v", items)
		}
		if sla, _ := items[0]["sla"].(map[string]any); sla == nil || sla["met"] != true {
			t.Fatalf("the example's SLA against the simulator: %v", items[0]["sla"])
		}
	})

	t.Run("a Model Service run with its access key", func(t *testing.T) {
		body := `{"model_service_group_id":"` + group[0] + `","api_key":"` + group[1] + `","matrix":[{"isl":16,"osl":8}],
			"warmup_requests":0,"concurrency_stages":[{"concurrency":2,"num_requests":4}]}`
		if code, resp := post(t, api+"/runs", "application/json", strings.Replace(body, group[1], "lens-mk-wrong", 1), nil); code != 403 {
			t.Fatalf("a wrong access key: %d %s", code, resp)
		}
		id := createRun(t, api, body)
		run := waitRun(t, api, id, time.Minute, isTerminal)
		if run["status"] != "succeeded" || run["model_service_group_id"] != group[0] || run["deployment_execution_id"] != execID ||
			run["metrics"].(map[string]any)["success_count"] != 4.0 {
			t.Fatalf("run %v %v %v", run["status"], run["error"], run["metrics"])
		}
		if strings.Contains(mustJSON(run), group[1]) {
			t.Fatal("the access key is in the run")
		}
	})

	t.Run("parallelism 2 is sent by two workers and merged", func(t *testing.T) {
		id := createRun(t, api, sim1(`{"deployment_execution_id":"sim-1","parallelism":2,"matrix":[{"isl":32,"osl":8}],
			"warmup_requests":1,"concurrency_stages":[{"concurrency":2,"num_requests":6},{"concurrency":4,"num_requests":10}]}`))
		run := waitRun(t, api, id, 2*time.Minute, isTerminal)
		if run["status"] != "succeeded" {
			t.Fatalf("run ended %v: %v", run["status"], run["error"])
		}
		// Each worker sends the whole workload once: 2 x 16 measured requests, over the union.
		m := run["metrics"].(map[string]any)
		if m["request_count"] != 32.0 || m["success_count"] != 32.0 {
			t.Fatalf("counts %v/%v, want 32/32", m["success_count"], m["request_count"])
		}
		stages := run["matrix_results"].([]any)[0].(map[string]any)["stage_metrics"].([]any)
		if stages[0].(map[string]any)["metrics"].(map[string]any)["request_count"] != 12.0 ||
			stages[1].(map[string]any)["metrics"].(map[string]any)["request_count"] != 20.0 {
			t.Fatalf("stage metrics %v", stages)
		}
		if ttft := m["ttft_ms"].(float64); ttft < 40 || ttft > 40+200 {
			t.Fatalf("ttft p50 %.1f ms (model 40)", ttft)
		}
		code, body := get(t, api+"/runs/"+id+"/artifacts/per-request-jsonl")
		if code != 200 {
			t.Fatalf("artifact: %d %s", code, body)
		}
		byWorker := map[float64]int{}
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			var rec struct {
				Metadata map[string]any `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("record %q: %v", line, err)
			}
			w, _ := rec.Metadata["worker"].(float64)
			byWorker[w]++
		}
		if len(byWorker) != 2 || byWorker[0] != 16 || byWorker[1] != 16 {
			t.Fatalf("records per worker %v, want 16 from each of workers 0 and 1", byWorker)
		}
		logs := mustJSON(run["logs"])
		for _, want := range []string{"Worker 0 of 2 started", "Worker 1 of 2 started", "Fanned out 2 workers"} {
			if !strings.Contains(logs, want) {
				t.Fatalf("run logs lack %q: %s", want, logs)
			}
		}
	})

	t.Run("a killed runner leaves the run failed", func(t *testing.T) {
		id := createRun(t, api, sim1(`{"deployment_execution_id":"sim-1","matrix":[{"isl":16,"osl":200}],"warmup_requests":0,
			"concurrency_stages":[{"concurrency":2,"num_requests":2000}]}`))
		waitRun(t, api, id, time.Minute, func(r map[string]any) bool { return r["phase"] == "matrix-0" })
		if err := syscall.Kill(pid("benchmark-runner"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		run := waitRun(t, api, id, 30*time.Second, isTerminal)
		if run["status"] != "failed" || !strings.Contains(run["error"].(string), "runner was lost") {
			t.Fatalf("run %v: %v", run["status"], run["error"])
		}
		t.Logf("failed %s after the kill (lease 3s)", time.Since(killed).Round(100*time.Millisecond))
	})
}

// runsFromEvent sends a CloudEvent to the broker twice (a redelivery), waits until the first run
// whose matrix contains matrixHas ended, and returns every such run.
func runsFromEvent(t *testing.T, api, broker, data string, header map[string]string, matrixHas string) []map[string]any {
	t.Helper()
	header["Ce-Specversion"] = "1.0"
	for range 2 {
		if code, body := post(t, broker, "application/json", data, header); code/100 != 2 {
			t.Fatalf("broker: %d %s", code, body)
		}
	}
	var items []map[string]any
	eventually(t, 2*time.Minute, "the run the event asked for", func() bool {
		_, body := get(t, api+"/runs")
		var list struct {
			Items []map[string]any `json:"items"`
		}
		_ = json.Unmarshal([]byte(body), &list)
		items = nil
		for _, it := range list.Items {
			if it["matrix"] != nil && strings.Contains(mustJSON(it["matrix"]), matrixHas) {
				items = append(items, it)
			}
		}
		return len(items) > 0 && isTerminal(items[0])
	})
	return items
}

// pingData is the data of the nightly PingSource example: its folded (>-) block scalar, whose
// lines YAML joins with spaces.
func pingData(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "examples", "nightly-benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.TrimSpace(line) == "data: >-":
			in = true
		case in && strings.HasPrefix(line, "    "):
			parts = append(parts, strings.TrimSpace(line))
		case in:
			in = false
		}
	}
	data := strings.Join(parts, " ")
	if !json.Valid([]byte(data)) {
		t.Fatalf("the example's data is not JSON: %s", data)
	}
	return data
}

func del(t *testing.T, url string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
