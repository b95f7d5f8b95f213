package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestBenchmarkEvidenceThroughTheStacksPrometheus runs the local stack as make run does with
// prometheus installed: the stack's Prometheus discovers its simulator from a file, the
// benchmark runner gets its URL, and a shared-prefix run against a registered kv-cache
// simulator (which Prometheus does not scrape until the run lists it) collects its evidence
// through Prometheus's HTTP API.
func TestBenchmarkEvidenceThroughTheStacksPrometheus(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus is not on PATH (apt-get install prometheus): the stack's Prometheus is not tested")
	}
	t.Setenv("POD_IP", "127.0.0.1")
	sim := startSimulator(t, "--time-to-first-token", "20ms", "--inter-token-latency", "2ms", "--enable-kvcache", "--kv-cache-size", "4096")
	dataDir := t.TempDir()
	stack := startStack(t, stackOptions{only: []string{"inventory-api", "evaluation-api", "benchmark-runner", "inference-sim"},
		dataDir: dataDir, prometheus: true, env: map[string]string{"LENS_LEASE_TTL": "3s", "LENS_SWEEP_INTERVAL": "500ms"}})
	if stack.PrometheusURL == "" {
		t.Fatal("prometheus is on PATH but the stack did not start it")
	}
	// The stack's own simulator is a discovered target from the start.
	stackSim, _, _ := stack.Simulator()
	raw, err := os.ReadFile(filepath.Join(dataDir, "prometheus", "targets", "stack-inference-sim.json"))
	var groups []struct{ Targets []string }
	if err != nil || json.Unmarshal(raw, &groups) != nil || len(groups) != 1 || "http://"+groups[0].Targets[0]+"/v1" != stackSim {
		t.Fatalf("the simulator's discovery file: %s (%v), simulator %s", raw, err, stackSim)
	}
	eventually(t, 30*time.Second, "Prometheus scraping the stack's simulator", func() bool {
		code, body := get(t, stack.PrometheusURL+"/api/v1/query?query=up%7Blens_service%3D%22inference-sim%22%7D")
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		return code == 200 && json.Unmarshal([]byte(body), &r) == nil && len(r.Data.Result) == 1 && r.Data.Result[0].Value[1] == "1"
	})

	reg := `{"cluster_session_id":"` + stack.LocalSessionID + `","name":"kv-sim","model":"` + simModel + `","endpoint":"` + sim + `"}`
	code, body := post(t, stack.APIURL+"/api/v1/deployments/executions", "application/json", reg, nil)
	var exec struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &exec) != nil {
		t.Fatalf("register the simulator: %d %s", code, body)
	}
	api := stack.APIURL + "/api/v1/evaluate"
	id := createRun(t, api, `{"deployment_execution_id":"`+exec.ID+`","shared_prefix":{"num_groups":2,"num_prompts_per_group":8,
		"system_prompt_len":256,"question_len":16,"output_len":8,"stages":[{"rate":10,"duration":2},{"rate":20,"duration":2}]}}`)
	run := waitRun(t, api, id, 2*time.Minute, isTerminal)
	if run["status"] != "succeeded" {
		t.Fatalf("run ended %v: %v", run["status"], run["error"])
	}
	mon := run["monitoring"].(map[string]any)
	setup := mon["preparation"].(map[string]any)["monitor_setup"].(map[string]any)
	if mon["source"] != "prometheus" || mon["status"] != "available" || setup["status"] != "created" {
		t.Fatalf("monitoring %v", mon)
	}
	m := run["metrics"].(map[string]any)
	obs := m["observability"].(map[string]any)
	align := obs["clock_alignment"].(map[string]any)
	if obs["source"] != "prometheus" || obs["prometheus_url"] != stack.PrometheusURL || obs["flow_status"] != "available" || align["status"] != "measured" {
		t.Fatalf("observability %v", obs)
	}
	if rate, ok := m["prefix_cache_hit_rate"].(float64); !ok || rate <= 0 {
		t.Fatalf("prefix_cache_hit_rate %v through Prometheus (observability %v)", m["prefix_cache_hit_rate"], obs)
	}
	if running, ok := m["running_requests"].(float64); !ok || running <= 0 {
		t.Fatalf("running_requests %v", m["running_requests"])
	}
	for i, st := range run["rate_stage_results"].([]any) {
		sm := st.(map[string]any)["metrics"].(map[string]any)
		if _, ok := sm["prefix_cache_hit_rate"].(float64); !ok {
			t.Fatalf("stage %d: prefix_cache_hit_rate %v", i, sm["prefix_cache_hit_rate"])
		}
	}
	snap := run["resource_snapshot"].(map[string]any)
	if snap["status"] != "captured" || snap["source"] != "prometheus" {
		t.Fatalf("resource_snapshot %v", snap)
	}
	row := snap["endpoints"].([]any)[0].(map[string]any)
	if cc, ok := row["cache_config"].(map[string]any); !ok || len(cc) == 0 {
		t.Fatalf("snapshot row %v", row)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "prometheus", "targets", "run-"+id+".json")); !os.IsNotExist(err) {
		t.Fatalf("the run's discovery file is still there: %v", err)
	}
}
