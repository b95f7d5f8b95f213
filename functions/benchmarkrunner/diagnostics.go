package benchmarkrunner

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// The run's diagnostics: the evidence the specification's Kubernetes backend gathers beside the
// metrics (EPP readiness, the KV working-set capture, the harness pods, the hardware profile).
// Each item says "available" with what was found, or "unavailable" with why; nothing is left
// out silently and nothing is made up. The load generator runs in this process (no harness pod)
// and Lensfn installs no KV probe in a serving container, so what exists is gathered from the
// endpoints themselves: the router's readiness and its replicas' health, the process that sent
// the load, and the serving gauges (KV-cache usage, prefix-cache hits) that stand in for the
// working set.

// seriesReplicaUp is the router's per-replica health gauge (inference-router).
const seriesReplicaUp = "inference_router_replica_up"

// eppReadiness checks the endpoint picker in front of a deployed execution's replicas (Lensfn's
// inference-router) before traffic: the process answers /ready and at least one replica is up
// (the spec's "a discovered EPP service needs a healthy target"). An execution without a router
// (an existing endpoint, a Model Service's member, a single replica) has no EPP to check.
func (mon *evidenceMonitor) eppReadiness(ctx context.Context) map[string]any {
	at := time.Now().UTC().Format(time.RFC3339Nano)
	id := evalrun.Str(mon.plan.run.DeploymentExecutionID)
	var e inventory.Execution
	var err error
	if id != "" {
		e, err = mon.r.uses.Execution(ctx, id)
	}
	picker := routerBase(e)
	if id == "" || err != nil || picker == "" {
		return map[string]any{"status": "unavailable", "checked_at": at,
			"reason": "the target has no endpoint picker: it is a single endpoint (an existing endpoint, a Model Service member or one replica), not a routed deployment"}
	}
	out := map[string]any{"endpoint_picker": picker, "checked_at": at}
	ready, reason := mon.getOK(ctx, picker+"/ready")
	out["ready"] = ready
	if !ready {
		out["status"], out["reason"] = "available", "the endpoint picker is not ready: "+reason
		return out
	}
	families, err := mon.monitor.readMetrics(ctx, picker+"/metrics")
	if err != nil {
		out["status"], out["reason"] = "available", "the endpoint picker's metrics could not be read: "+err.Error()
		out["healthy_targets"] = nil
		return out
	}
	up, total := replicasUp(families[seriesReplicaUp])
	out["status"], out["healthy_targets"], out["targets"] = "available", up, total
	if up == 0 {
		out["reason"] = "no replica behind the endpoint picker is up"
	}
	return out
}

// routerBase is the router's base URL of a deployed execution ("" without a router): the
// deployer records the router's /v1 (or /balanced/v1) as the endpoint and the replicas apart.
func routerBase(e inventory.Execution) string {
	if len(e.ReplicaEndpoints) == 0 || e.Endpoint == "" {
		return ""
	}
	base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimRight(e.Endpoint, "/"), "/v1"), "/balanced")
	for _, r := range e.ReplicaEndpoints {
		if strings.TrimRight(r, "/") == base {
			return "" // the endpoint is a replica itself: no router
		}
	}
	return base
}

func replicasUp(f *dto.MetricFamily) (up, total int) {
	for _, m := range f.GetMetric() {
		total++
		if m.GetGauge().GetValue() > 0 {
			up++
		}
	}
	return up, total
}

// getOK reports whether url answers 2xx within 5 s, or why not.
func (mon *evidenceMonitor) getOK(ctx context.Context, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := mon.r.client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return false, fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return true, ""
}

// diagnostics is the run's diagnostics block at completion, with the endpoint picker's
// readiness as the preparation found it.
func (mon *evidenceMonitor) diagnostics(ctx context.Context) map[string]any {
	epp := mon.epp
	if epp == nil {
		epp = map[string]any{"status": "unavailable", "reason": "serving monitoring was not prepared, so the endpoint picker was not checked"}
	}
	kv := map[string]any{"status": "unavailable",
		"reason": "the KV working set needs a KV-capture probe in the serving containers (vLLM V1, prefix caching, one FullAttention cache group) " +
			"and request association; Lensfn installs no probe and benchmarks the target as it is",
		"equivalents": "metrics.kv_cache_usage and metrics.prefix_cache_hit_rate (per endpoint in metrics.per_endpoint), from the endpoints' vLLM gauges and counters"}
	if p := *mon.plan.spec.Parallelism; p != 1 {
		kv["reason"] = fmt.Sprintf("parallelism is %d: the KV working set is collected with one worker only (request association); "+
			"besides, Lensfn installs no KV-capture probe", p)
	}
	harness := map[string]any{"status": "available", "kind": "in-process", "harness": *mon.plan.spec.Harness,
		"runner_instance": mon.r.deps.Config.InstanceID, "workers": *mon.plan.spec.Parallelism,
		"harness_pods": nil, "harness_pods_reason": "no harness pod: the load generator runs inside the benchmark-runner instance (workers are its own leased executions)"}
	cluster := mon.clusterEvidence(ctx)
	hw := mon.hardwareProfile()
	hw["cluster_accelerators"] = clusterAccelerators(cluster)
	return map[string]any{"epp_readiness": epp, "kv_working_set": kv, "harness": harness, "hardware_profile": hw, "cluster": cluster}
}

// clusterSource says where the cluster evidence comes from.
const clusterSource = "the deployer's knative provider, read with the cluster session's kubeconfig (the runner holds no cluster credential)"

// clusterEvidence is the run's diagnostics.cluster: what the deployer's knative provider found on
// the cluster about the run's deployment execution (its serving pods, their nodes, the pods'
// warnings), gathered at readiness and refreshed while runs use it, with when it was collected
// and whether that was during this run; or unavailable with why (the execution is not a
// deployment the deployer made on a Kubernetes cluster, or it recorded none).
func (mon *evidenceMonitor) clusterEvidence(ctx context.Context) map[string]any {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	id := evalrun.Str(mon.plan.run.DeploymentExecutionID)
	unavailable := func(reason string) map[string]any {
		return map[string]any{"status": "unavailable", "reason": reason, "source": clusterSource}
	}
	if id == "" {
		return unavailable("the run names no deployment execution")
	}
	e, err := mon.r.uses.Execution(ctx, id)
	if err != nil {
		return unavailable("deployment execution " + id + " could not be read: " + err.Error())
	}
	ev := e.ClusterEvidence
	if ev == nil {
		switch kind := mon.clusterKind(ctx, e); {
		case e.Ownership != inventory.OwnershipEvaluation:
			return unavailable("deployment execution " + id + " is a registered endpoint (" + e.Ownership + "), not a deployment the deployer made: " +
				"Lensfn has no access to the cluster that serves it")
		case kind == inventory.ClusterLocal:
			return unavailable("deployment execution " + id + " was deployed by the local provider (processes on the deployer's host): there is no " +
				"Kubernetes cluster; the serving evidence is the endpoints' own (metrics.kv_cache_usage, metrics.prefix_cache_hit_rate, metrics.per_endpoint)")
		default:
			return unavailable("the deployer recorded no cluster evidence for deployment execution " + id +
				" (deployed before it gathered any, or by a deployer without the knative provider)")
		}
	}
	out := map[string]any{"status": ev.Status, "source": clusterSource, "collected_at": ev.CollectedAt.Format(time.RFC3339Nano),
		"occasion": ev.Occasion, "collected_during_run": !ev.CollectedAt.Before(mon.started), "cluster": ev.Cluster,
		"namespace": ev.Namespace, "services": ev.Services, "pods": ev.Pods, "nodes": ev.Nodes, "events": ev.Events}
	if ev.Reason != "" {
		out["reason"] = ev.Reason
	}
	return out
}

// clusterKind is the kind of the cluster the execution's session belongs to ("" unknown).
func (mon *evidenceMonitor) clusterKind(ctx context.Context, e inventory.Execution) string {
	s, err := mon.r.uses.Session(ctx, e.ClusterSessionID)
	if err != nil {
		return ""
	}
	return s.ClusterKind
}

// clusterAccelerators is hardware_profile.cluster_accelerators: the accelerator facts the
// cluster declares for the nodes the serving pods ran on (labels and allocatable resources,
// not measurements), from the cluster evidence.
func clusterAccelerators(cluster map[string]any) map[string]any {
	nodes, ok := cluster["nodes"].(inventory.NodesEvidence)
	if !ok {
		return map[string]any{"status": "unavailable", "reason": "no cluster evidence: " + fmt.Sprint(cluster["reason"])}
	}
	out := map[string]any{"status": nodes.Status, "source": "the nodes' labels and allocatable resources (declared by the cluster, not measured)"}
	if nodes.Reason != "" {
		out["reason"] = nodes.Reason
	}
	items := make([]map[string]any, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		items = append(items, map[string]any{"node": n.Name, "gpu_product": n.GPUProduct, "gpu_count": n.GPUCount, "allocatable_gpu": n.AllocatableGPU})
	}
	out["nodes"] = items
	return out
}

// noDeviceMetrics is why no measured device evidence exists.
const noDeviceMetrics = "the runner reads no device metrics: the serving endpoints' /metrics carry vLLM's serving series only"

// hardwareProfile is the run's hardware_profile snapshot: the declared profile of the requested
// accelerator_profile from the engine model's GPU catalogue (compute, memory, bandwidth), never
// measured; unavailable without a catalogue GPU (no profile requested, or a vendor profile that
// names no device).
func (mon *evidenceMonitor) hardwareProfile() map[string]any {
	requested := mon.plan.spec.AcceleratorProfile
	out := map[string]any{"accelerator_profile": requested, "device_metrics": "unavailable: " + noDeviceMetrics}
	if requested == nil || *requested == "" {
		out["status"], out["reason"] = "unavailable", "no accelerator_profile was requested, and "+noDeviceMetrics
		return out
	}
	profile, _ := enginemodel.LookupAccelerator(*requested)
	gpu, ok := stepcost.LookupGPU(profile)
	if !ok {
		out["status"], out["reason"] = "unavailable", "accelerator_profile "+*requested+" is a vendor profile that names no device of the catalogue, and "+noDeviceMetrics
		return out
	}
	out["status"], out["source"] = "available", "the engine model's GPU catalogue (declared, not measured)"
	out["profile"] = map[string]any{"name": gpu.Name, "tflops": gpu.TFLOPS, "memory_bandwidth_gbs": gpu.MemoryBandwidthGBs,
		"memory_gb": gpu.MemoryGB, "interconnect_gbs": gpu.InterconnectGBs}
	return out
}
