package benchmarkrunner_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/inventory"
)

// TestRunDiagnosticsSayWhatExistsAndWhatDoesNot: a routed run records the endpoint picker's
// readiness checked before traffic (the router answers /ready, one of its two replicas is up),
// and says why the KV working set is unavailable and that the harness
// runs in-process, and records the declared hardware profile of its accelerator_profile; a run
// against a single endpoint without a profile says it has no endpoint picker and no profile.
// Neither has cluster evidence, and each says why (tests/openapi's
// TestRunDiagnosticsCarryTheClusterEvidence has runs that do).
func TestRunDiagnosticsSayWhatExistsAndWhatDoesNot(t *testing.T) {
	h := start(t, &fakeModel{}, fast())
	rs := startReplicas(t)
	target, _ := url.Parse(rs.urls[0])
	proxy := httputil.NewSingleHostReverseProxy(target)
	var readyChecks int
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ready":
			readyChecks++
		case "/metrics":
			fmt.Fprintf(w, "# TYPE inference_router_replica_up gauge\ninference_router_replica_up{replica=%q} 1\ninference_router_replica_up{replica=%q} 0\n",
				rs.urls[0], rs.urls[1])
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(router.Close)
	inv := &inventory.Repo{Store: h.deps.Store, Sealer: h.runs.Sealer}
	if err := inv.PutExecution(context.Background(), inventory.Execution{ID: "exec-1", ClusterSessionID: "s-1", Name: "routed",
		Model: "fake-model", Endpoint: router.URL + "/v1", Ownership: inventory.OwnershipEvaluation, ReplicaEndpoints: rs.urls[:]}, ""); err != nil {
		t.Fatal(err)
	}
	id := h.createAgainst(t, router.URL+"/v1", "", strings.Replace(routedMatrix, `{`, `{"accelerator_profile":"h100",`, 1))
	m := doc(t, h.waitFor(t, id, 30*time.Second, terminal))
	if m["status"] != "succeeded" {
		t.Fatalf("status %v error %v", m["status"], m["error"])
	}
	diag, ok := m["diagnostics"].(map[string]any)
	if !ok {
		t.Fatalf("no diagnostics: %v", m)
	}
	epp := diag["epp_readiness"].(map[string]any)
	if epp["status"] != "available" || epp["ready"] != true || epp["healthy_targets"] != 1.0 || epp["targets"] != 2.0 ||
		epp["endpoint_picker"] != router.URL || readyChecks != 1 {
		t.Fatalf("epp_readiness %v (%d /ready checks)", epp, readyChecks)
	}
	if prep := m["monitoring"].(map[string]any)["preparation"].(map[string]any); prep["epp"] == nil {
		t.Fatalf("the preparation evidence lacks the EPP check: %v", prep)
	}
	kv := diag["kv_working_set"].(map[string]any)
	if kv["status"] != "unavailable" || !strings.Contains(kv["reason"].(string), "probe") || !strings.Contains(kv["equivalents"].(string), "prefix_cache_hit_rate") {
		t.Fatalf("kv_working_set %v", kv)
	}
	hw := diag["hardware_profile"].(map[string]any)
	if profile, _ := hw["profile"].(map[string]any); hw["status"] != "available" || profile["name"] != "H100-SXM-80GB" ||
		!strings.Contains(hw["device_metrics"].(string), "unavailable") {
		t.Fatalf("hardware_profile of h100: %v", hw)
	}
	if hr := diag["harness"].(map[string]any); hr["kind"] != "in-process" || hr["harness"] != "inference-perf" || hr["runner_instance"] == "" {
		t.Fatalf("harness %v", hr)
	}
	// A deployment of ownership evaluation without cluster evidence: the run says so.
	if c := diag["cluster"].(map[string]any); c["status"] != "unavailable" || !strings.Contains(c["reason"].(string), "recorded no cluster evidence") {
		t.Fatalf("cluster %v", c)
	}

	// One endpoint, no router: nothing to check, and the run says so.
	if err := inv.PutExecution(context.Background(), inventory.Execution{ID: "exec-1", ClusterSessionID: "s-1", Name: "single",
		Model: "fake-model", Endpoint: rs.urls[1] + "/v1", Ownership: inventory.OwnershipExistingEndpoint}, ""); err != nil {
		t.Fatal(err)
	}
	single := h.createAgainst(t, rs.urls[1]+"/v1", "", routedMatrix)
	m = doc(t, h.waitFor(t, single, 30*time.Second, terminal))
	diag = m["diagnostics"].(map[string]any)
	if epp := diag["epp_readiness"].(map[string]any); epp["status"] != "unavailable" || !strings.Contains(epp["reason"].(string), "no endpoint picker") {
		t.Fatalf("single endpoint epp_readiness %v", epp)
	}
	if hw := diag["hardware_profile"].(map[string]any); hw["status"] != "unavailable" || !strings.Contains(hw["reason"].(string), "no accelerator_profile") {
		t.Fatalf("hardware_profile without a profile: %v", hw)
	}
	// A registered endpoint: Lensfn has no access to its cluster.
	if c := diag["cluster"].(map[string]any); c["status"] != "unavailable" || !strings.Contains(c["reason"].(string), "registered endpoint (existing-endpoint)") {
		t.Fatalf("cluster of a registered endpoint %v", c)
	}
}
