package knative_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/functions/deployer/knative"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/secret"
)

const clusterToken = "secret-token-xyz"

// deployOn registers the fake cluster (namespace eval) and deploys a 2-replica
// optimized-baseline on it through the real client-go dynamic client; the router's pod runs
// on gpu-node-2, the replicas' on gpu-node-1.
func deployOn(t *testing.T, cluster *fakeCluster) (*inventory.Repo, *knative.Provider, *deployer.Deployment) {
	t.Helper()
	repo := newRepo(t)
	ctx := context.Background()
	_, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "gpu-cluster", Kind: inventory.ClusterKubernetes,
		Namespace: "eval", Kubeconfig: cluster.kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	cluster.nodeOf = func(service string) string {
		if strings.HasSuffix(service, "-router") {
			return "gpu-node-2"
		}
		return "gpu-node-1"
	}
	cluster.gpuNode("gpu-node-1", "NVIDIA-H100-80GB-HBM3", 8)
	cluster.gpuNode("gpu-node-2", "NVIDIA-A100-SXM4-40GB", 4)
	k := &knative.Provider{Inventory: repo, ReadyTimeout: 10 * time.Second, Poll: 10 * time.Millisecond}
	cfg, err := deployconfig.Parse("optimized-baseline", []byte(`{"model":{"name":"m"},"decode":{"replicas":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}
	if err := k.Deploy(ctx, d, cfg, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(d.Objects) != 3 {
		t.Fatalf("objects %+v", d.Objects)
	}
	return repo, k, d
}

// The knative provider gathers what the cluster offers about a ready deployment, with the
// session's kubeconfig against a Kubernetes API server on loopback: each Service's pod (phase,
// readiness, restarts and the last termination, container images and resources, its node and
// role), the accelerator facts of those nodes (GPU product, count and allocatable GPUs, the
// accelerator labels and no other), and the pods' Warning events only (not another
// deployment's, not Normal ones). It only reads, and never shows the token.
func TestKnativeGathersWhatTheClusterOffers(t *testing.T) {
	cluster := newFakeCluster(t, clusterToken)
	_, k, d := deployOn(t, cluster)
	decode0 := d.Objects[0].Name
	cluster.restart(decode0, 3)
	pod := cluster.podOfService(decode0)
	cluster.event("eval", pod, "Warning", "BackOff", "Back-off restarting failed container decode", 4, "2026-12-05T03:10:00Z")
	cluster.event("eval", pod, "Warning", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", 2, "2026-12-05T03:12:00Z")
	cluster.event("eval", pod, "Normal", "Pulled", "Container image pulled", 1, "2026-12-05T03:00:01Z")
	cluster.event("eval", "lens-other-decode-0-00001-deployment-1-a", "Warning", "BackOff", "someone else's", 1, "2026-12-05T03:11:00Z")
	before := len(cluster.requests())

	ev := k.Evidence(context.Background(), d, inventory.EvidenceAtReady)
	if ev.Status != inventory.EvidenceAvailable || ev.Reason != "" || ev.Occasion != inventory.EvidenceAtReady || ev.Cluster != "gpu-cluster" ||
		ev.Namespace != "eval" || len(ev.Services) != 3 || time.Since(ev.CollectedAt) > time.Minute {
		t.Fatalf("evidence %+v", ev)
	}
	if len(ev.Pods.Items) != 3 || ev.Pods.Status != inventory.EvidenceAvailable {
		t.Fatalf("pods %+v", ev.Pods)
	}
	roles := map[string]inventory.ClusterPod{}
	for _, p := range ev.Pods.Items {
		roles[p.Service] = p
		if p.Phase != "Running" || !p.Ready || p.Revision != p.Service+"-00001" || len(p.Containers) != 2 || p.Started == nil ||
			p.Containers[1].Name != "queue-proxy" {
			t.Fatalf("pod %+v", p)
		}
	}
	p := roles[decode0]
	c := p.Containers[0]
	if p.Role != "decode" || p.Node != "gpu-node-1" || p.Restarts != 3 || c.RestartCount != 3 || c.LastTermination != "OOMKilled, exit 137" ||
		c.Image != knative.DefaultSimulatorImage || !strings.HasPrefix(c.ImageID, "registry.example/sim@sha256:") || c.State != "running" ||
		c.Limits["nvidia.com/gpu"] != "1" || c.Requests["memory"] != "2Gi" {
		t.Fatalf("decode pod %+v", p)
	}
	if r := roles[d.Objects[2].Name]; r.Role != "router" || r.Node != "gpu-node-2" || r.Restarts != 0 || r.Containers[0].Image != knative.DefaultRouterImage {
		t.Fatalf("router pod %+v", r)
	}
	if len(ev.Nodes.Items) != 2 || ev.Nodes.Status != inventory.EvidenceAvailable {
		t.Fatalf("nodes %+v", ev.Nodes)
	}
	n := ev.Nodes.Items[0]
	if n.Name != "gpu-node-1" || n.GPUProduct != "NVIDIA-H100-80GB-HBM3" || n.GPUCount != "8" || n.AllocatableGPU != "8" || !n.Ready ||
		n.Labels["node.kubernetes.io/instance-type"] != "p5.48xlarge" || n.Labels["nvidia.com/gpu.memory"] != "81559" ||
		n.Labels["team"] != "" || n.Labels["kubernetes.io/hostname"] != "" || n.Capacity["pods"] != "" || n.Allocatable["cpu"] != "191" ||
		n.KubeletVersion != "v1.29.2" || n.ContainerRuntime != "containerd://1.7.13" || n.Architecture != "amd64" {
		t.Fatalf("node %+v", n)
	}
	if ev.Nodes.Items[1].GPUProduct != "NVIDIA-A100-SXM4-40GB" || ev.Nodes.Items[1].AllocatableGPU != "4" {
		t.Fatalf("router's node %+v", ev.Nodes.Items[1])
	}
	if ev.Events.Status != inventory.EvidenceAvailable || len(ev.Events.Items) != 2 || ev.Events.Items[0].Reason != "Unhealthy" ||
		ev.Events.Items[1].Reason != "BackOff" || ev.Events.Items[1].Count != 4 || ev.Events.Items[1].Pod != pod {
		t.Fatalf("events %+v", ev.Events)
	}
	for _, req := range cluster.requests()[before:] {
		if !strings.HasPrefix(req, "GET ") {
			t.Fatalf("the evidence gathering sent %s", req)
		}
	}
	raw, _ := json.Marshal(ev)
	if strings.Contains(string(raw), clusterToken) {
		t.Fatalf("the evidence shows the token: %s", raw)
	}
}

// What the cluster refuses is unavailable with the cluster's own answer and what the identity
// needs; nothing is made up: nodes forbidden (a namespaced Role cannot grant them) leaves the
// pods and events available and the whole partial; pods and events forbidden too make every
// part unavailable; a cluster that does not answer, and a deployment without Services, are
// unavailable with why.
func TestKnativeEvidenceSaysWhatTheClusterRefused(t *testing.T) {
	cluster := newFakeCluster(t, clusterToken)
	_, k, d := deployOn(t, cluster)
	ctx := context.Background()

	cluster.mu.Lock()
	cluster.forbid["nodes"] = true
	cluster.mu.Unlock()
	ev := k.Evidence(ctx, d, inventory.EvidenceAtReady)
	if ev.Status != inventory.EvidencePartial || ev.Pods.Status != inventory.EvidenceAvailable || ev.Events.Status != inventory.EvidenceAvailable ||
		ev.Nodes.Status != inventory.EvidenceUnavailable || len(ev.Nodes.Items) != 0 ||
		!strings.Contains(ev.Nodes.Reason, "the cluster refused to get node gpu-node-1 (403 Forbidden)") ||
		!strings.Contains(ev.Nodes.Reason, "at the cluster scope") || !strings.Contains(ev.Nodes.Reason, knative.RBACHint) ||
		!strings.HasPrefix(ev.Reason, "nodes: ") {
		t.Fatalf("nodes forbidden: %+v", ev)
	}

	cluster.mu.Lock()
	cluster.forbid["pods"], cluster.forbid["events"] = true, true
	cluster.mu.Unlock()
	ev = k.Evidence(ctx, d, inventory.EvidenceInUse)
	if ev.Status != inventory.EvidenceUnavailable || !strings.Contains(ev.Pods.Reason, "the cluster refused to list pods in namespace eval (403 Forbidden)") ||
		ev.Nodes.Reason != "the serving pods are unknown, so are their nodes" || !strings.Contains(ev.Events.Reason, "list events") ||
		!strings.Contains(ev.Reason, "pods: ") || !strings.Contains(ev.Reason, "events: ") || ev.Pods.Items == nil {
		t.Fatalf("all forbidden: %+v", ev)
	}

	cluster.server.Close()
	ev = k.Evidence(ctx, d, inventory.EvidenceInUse)
	if ev.Status != inventory.EvidenceUnavailable || !strings.Contains(ev.Pods.Reason, "could not list pods in namespace eval") {
		t.Fatalf("cluster gone: %+v", ev)
	}
	raw, _ := json.Marshal(ev)
	if strings.Contains(string(raw), clusterToken) {
		t.Fatalf("the evidence shows the token: %s", raw)
	}

	ev = k.Evidence(ctx, &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: d.ClusterSessionID}, inventory.EvidenceAtReady)
	if ev.Status != inventory.EvidenceUnavailable || ev.Reason != "the deployment records no Knative Service" {
		t.Fatalf("no Services: %+v", ev)
	}
}

// Through the deployer: a deployment.requested on a kubernetes cluster session leaves an
// execution whose cluster_evidence was gathered at readiness, and while a run uses the
// execution the deployer refreshes it (a restart that happened since shows).
func TestDeployerRecordsAndRefreshesClusterEvidence(t *testing.T) {
	cluster := newFakeCluster(t, clusterToken)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	t.Cleanup(sink.Close)
	key := secret.NewKey()
	deps := fntest.Deps(t, "deployer", fntest.Env(t, map[string]string{"LENS_SECRET_KEY": key, "K_SINK": sink.URL}))
	sealer, err := secret.FromEnv(key)
	if err != nil {
		t.Fatal(err)
	}
	repo := &inventory.Repo{Store: deps.Store, Sealer: sealer}
	ctx := context.Background()
	_, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "gpu-cluster", Kind: inventory.ClusterKubernetes,
		Namespace: "eval", Kubeconfig: cluster.kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	cluster.gpuNode("node-1", "NVIDIA-H100-80GB-HBM3", 8)
	cfg, err := repo.CreateConfiguration(ctx, inventory.ConfigurationSpec{Name: "cfg", SchemaVersion: inventory.ConfigurationSchemaV1,
		Type: inventory.ConfigurationGuide, Format: inventory.ConfigurationFormat, ProviderRef: "baseline-vllm",
		Content: json.RawMessage(`{"model":{"name":"m"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	provider := &knative.Provider{Inventory: repo, ReadyTimeout: 10 * time.Second, Poll: 10 * time.Millisecond}
	f := deployer.New(deps, deployer.Settings{LeaseTTL: time.Second, SweepInterval: 200 * time.Millisecond, DeployTimeout: 10 * time.Second,
		EvidenceInterval: 200 * time.Millisecond}, repo, map[string]deployer.Provider{deployer.ProviderKnative: provider}).Function()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.Start(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(50 * time.Millisecond) // Start records its context before the first event

	id := inventory.NewID()
	raw, _ := json.Marshal(events.DeploymentRequested{ExecutionID: id, ConfigurationID: cfg.ID, ClusterSessionID: session.ID, CaseRef: "wf/1"})
	if err := f.Events[events.TypeDeploymentRequested](ctx, cloudevent.Event{ID: "e1", Type: events.TypeDeploymentRequested, Data: raw}); err != nil {
		t.Fatal(err)
	}
	evidence := func(want func(*inventory.ClusterEvidence) bool) *inventory.ClusterEvidence {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			e, err := repo.Execution(ctx, id)
			if err == nil && e.ClusterEvidence != nil && want(e.ClusterEvidence) {
				return e.ClusterEvidence
			}
			if time.Now().After(deadline) {
				t.Fatalf("execution %+v (%v)", e, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ev := evidence(func(*inventory.ClusterEvidence) bool { return true })
	if ev.Occasion != inventory.EvidenceAtReady || ev.Status != inventory.EvidenceAvailable || len(ev.Pods.Items) != 1 ||
		ev.Pods.Items[0].Restarts != 0 || ev.Nodes.Items[0].GPUProduct != "NVIDIA-H100-80GB-HBM3" {
		t.Fatalf("evidence at readiness %+v", ev)
	}
	// Not in use: no refresh.
	time.Sleep(600 * time.Millisecond)
	if e, _ := repo.Execution(ctx, id); !e.ClusterEvidence.CollectedAt.Equal(ev.CollectedAt) {
		t.Fatalf("refreshed while no run used it: %+v", e.ClusterEvidence)
	}
	if err := repo.AcquireUse(ctx, id, "run-1"); err != nil {
		t.Fatal(err)
	}
	cluster.restart(ev.Services[0], 2)
	ev = evidence(func(e *inventory.ClusterEvidence) bool {
		return e.Occasion == inventory.EvidenceInUse && len(e.Pods.Items) == 1 && e.Pods.Items[0].Restarts == 2
	})
	if ev.Pods.Items[0].Containers[0].LastTermination != "OOMKilled, exit 137" {
		t.Fatalf("refreshed evidence %+v", ev)
	}
	if e, _ := repo.Execution(ctx, id); e.ActiveUses != 1 || e.Endpoint == "" {
		t.Fatalf("the refresh changed the execution: %+v", e)
	}
}
