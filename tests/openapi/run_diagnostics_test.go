package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
	"github.com/lensfn/lensfn/runtime/secret"
)

// TestRunDiagnosticsCarryTheClusterEvidence: a run's answer (GET /runs/{id} of evaluation-api,
// after a benchmark runner on the same store finished it) carries diagnostics.cluster. Against
// an execution the deployer made on a Kubernetes cluster it is the evidence the deployer
// recorded (pods with restarts and images, nodes, warnings; partial where the cluster refused
// the nodes, saying so), and hardware_profile.cluster_accelerators repeats the nodes' GPUs;
// against one the local provider made it is unavailable, saying there is no cluster; neither
// answer shows the cluster's token.
func TestRunDiagnosticsCarryTheClusterEvidence(t *testing.T) {
	model := httptest.NewServer(fakeModel())
	t.Cleanup(model.Close)
	a := apis[slices.IndexFunc(apis, func(a api) bool { return a.name == evaluationapi.Name })]
	s := startWith(t, a, "")
	sealer, err := secret.FromEnv(s.key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inv := &inventory.Repo{Store: s.deps.Store, Sealer: sealer}
	const token = "cluster-token-never-shown"
	_, k8s, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "gpu-cluster", Kind: inventory.ClusterKubernetes, Namespace: "eval",
		Kubeconfig: kubeconfigtest.Token("https://k8s.example:6443", token)})
	if err != nil {
		t.Fatal(err)
	}
	_, local, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "here", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().UTC().Add(-time.Minute)
	evidence := &inventory.ClusterEvidence{Status: inventory.EvidencePartial, CollectedAt: started, Occasion: inventory.EvidenceAtReady,
		Cluster: "gpu-cluster", Namespace: "eval", Services: []string{"lens-x-decode-0"},
		Reason: "nodes: the cluster refused to get node gpu-node-1 (403 Forbidden): nodes \"gpu-node-1\" is forbidden",
		Pods: inventory.PodsEvidence{Status: inventory.EvidenceAvailable, Items: []inventory.ClusterPod{{Name: "lens-x-decode-0-00001-deployment-a",
			Service: "lens-x-decode-0", Role: "decode", Phase: "Running", Ready: true, Restarts: 2, Node: "gpu-node-1",
			Containers: []inventory.ClusterContainer{{Name: "decode", Image: "registry.example/sim:v1", Ready: true, RestartCount: 2,
				State: "running", LastTermination: "OOMKilled, exit 137"}}}}},
		Nodes: inventory.NodesEvidence{Status: inventory.EvidenceUnavailable, Items: []inventory.ClusterNode{},
			Reason: "the cluster refused to get node gpu-node-1 (403 Forbidden): nodes \"gpu-node-1\" is forbidden"},
		Events: inventory.EventsEvidence{Status: inventory.EvidenceAvailable, Items: []inventory.ClusterEvent{{Pod: "lens-x-decode-0-00001-deployment-a",
			Reason: "BackOff", Message: "Back-off restarting failed container", Count: 3}}}}
	for _, e := range []inventory.Execution{
		{ID: "exec-k8s", ClusterSessionID: k8s.ID, Name: "on-k8s", Model: "fake-model", Endpoint: model.URL + "/v1", Namespace: "eval",
			Ownership: inventory.OwnershipEvaluation, ClusterEvidence: evidence},
		{ID: "exec-local", ClusterSessionID: local.ID, Name: "local", Model: "fake-model", Endpoint: model.URL + "/v1",
			Ownership: inventory.OwnershipEvaluation},
	} {
		if err := inv.PutExecution(ctx, e, ""); err != nil {
			t.Fatal(err)
		}
	}
	runs := &evalrun.Repo{Store: s.deps.Store, Sealer: sealer, DataDir: s.deps.Config.DataDir}
	runner := benchmarkrunner.NewRunner(s.deps, benchmarkrunner.Settings{MaxConcurrent: 2, LeaseTTL: 5 * time.Second,
		SweepInterval: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond, ReportInterval: 100 * time.Millisecond,
		ScrapeInterval: 50 * time.Millisecond}, runs)
	runCtx, stop := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); runner.Sweep(runCtx) }()
	t.Cleanup(func() { stop(); <-swept; _ = runner.Close(context.Background()) })
	bearer := fntest.Token(t, s.server)

	finished := func(execution string) (map[string]any, string) {
		t.Helper()
		code, raw := send(t, s, bearer, "POST", eval+"/runs", `{"deployment_execution_id":"`+execution+`","accelerator_profile":"h100",
			"matrix":[{"isl":16,"osl":4}],"concurrency_stages":[{"concurrency":1,"num_requests":3}],"warmup_requests":0}`)
		if code != http.StatusAccepted {
			t.Fatalf("create against %s: %d %s", execution, code, raw)
		}
		id := between(string(raw), `"id":"`, `"`)
		deadline := time.Now().Add(90 * time.Second)
		for {
			code, raw = send(t, s, bearer, "GET", eval+"/runs/"+id, "")
			var run map[string]any
			if err := json.Unmarshal(raw, &run); err != nil {
				t.Fatalf("GET run: %v %s", err, raw)
			}
			if code == http.StatusOK && evalrun.Terminal(fmt.Sprint(run["status"])) {
				if run["status"] != evalrun.StatusSucceeded {
					t.Fatalf("run against %s: %v %v", execution, run["status"], run["error"])
				}
				return run["diagnostics"].(map[string]any), string(raw)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run against %s did not finish: %s", execution, raw)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	diag, raw := finished("exec-k8s")
	cluster := diag["cluster"].(map[string]any)
	pods, _ := cluster["pods"].(map[string]any)
	items, _ := pods["items"].([]any)
	if cluster["status"] != "partial" || !strings.Contains(fmt.Sprint(cluster["reason"]), "403 Forbidden") || cluster["occasion"] != "deployment-ready" ||
		cluster["collected_during_run"] != false || cluster["namespace"] != "eval" || cluster["cluster"] != "gpu-cluster" ||
		!strings.Contains(fmt.Sprint(cluster["source"]), "no cluster credential") || len(items) != 1 {
		t.Fatalf("diagnostics.cluster %v", cluster)
	}
	pod := items[0].(map[string]any)
	container := pod["containers"].([]any)[0].(map[string]any)
	if pod["restarts"] != 2.0 || pod["node"] != "gpu-node-1" || container["image"] != "registry.example/sim:v1" || container["last_termination"] != "OOMKilled, exit 137" {
		t.Fatalf("pod %v", pod)
	}
	if ev := cluster["events"].(map[string]any)["items"].([]any); len(ev) != 1 || ev[0].(map[string]any)["reason"] != "BackOff" {
		t.Fatalf("events %v", ev)
	}
	hw := diag["hardware_profile"].(map[string]any)
	if acc := hw["cluster_accelerators"].(map[string]any); acc["status"] != "unavailable" || !strings.Contains(fmt.Sprint(acc["reason"]), "gpu-node-1") ||
		hw["status"] != "available" {
		t.Fatalf("hardware_profile %v", hw)
	}
	if strings.Contains(raw, token) {
		t.Fatal("the run's answer shows the cluster's token")
	}

	// The nodes can be read now: the deployer's next refresh (during a run) has them.
	evidence.Status, evidence.Reason, evidence.CollectedAt, evidence.Occasion = inventory.EvidenceAvailable, "", time.Now().UTC().Add(time.Hour), inventory.EvidenceInUse
	evidence.Nodes = inventory.NodesEvidence{Status: inventory.EvidenceAvailable, Items: []inventory.ClusterNode{{Name: "gpu-node-1", Ready: true,
		GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUCount: "8", AllocatableGPU: "8"}}}
	if err := inv.SetExecutionClusterEvidence(ctx, "exec-k8s", *evidence); err != nil {
		t.Fatal(err)
	}
	diag, _ = finished("exec-k8s")
	cluster = diag["cluster"].(map[string]any)
	acc := diag["hardware_profile"].(map[string]any)["cluster_accelerators"].(map[string]any)
	nodes, _ := acc["nodes"].([]any)
	if cluster["status"] != "available" || cluster["reason"] != nil || cluster["occasion"] != "in-use-refresh" || cluster["collected_during_run"] != true ||
		acc["status"] != "available" || len(nodes) != 1 || nodes[0].(map[string]any)["gpu_product"] != "NVIDIA-H100-80GB-HBM3" ||
		nodes[0].(map[string]any)["allocatable_gpu"] != "8" {
		t.Fatalf("diagnostics.cluster %v, cluster_accelerators %v", cluster, acc)
	}

	diag, _ = finished("exec-local")
	cluster = diag["cluster"].(map[string]any)
	if cluster["status"] != "unavailable" || !strings.Contains(fmt.Sprint(cluster["reason"]), "local provider") || cluster["pods"] != nil {
		t.Fatalf("diagnostics.cluster of a local deployment %v", cluster)
	}
	if acc := diag["hardware_profile"].(map[string]any)["cluster_accelerators"].(map[string]any); acc["status"] != "unavailable" ||
		!strings.Contains(fmt.Sprint(acc["reason"]), "local provider") {
		t.Fatalf("cluster_accelerators of a local deployment %v", acc)
	}
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}
