package evaluationapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// TestAnotherBackendGets409: two backends (LENS_BACKEND_ID a and b) share one state store. A
// cancel, retry or delete sent to the backend that does not own the run or workflow is a 409
// naming the owner, and changes nothing; the owner's own requests go through. A run created by
// a but claimed by a runner of b belongs to b while b holds its lease.
func TestAnotherBackendGets409(t *testing.T) {
	store := fntest.NewOutage(t)
	shared := []string{"REDIS_URL", store.URL, "LENS_STORE_PREFIX", "lens:{owners}:", "LENS_SECRET_KEY", secret.NewKey()}
	a := start(t, append(shared, "LENS_BACKEND_ID", "backend-a")...)
	b := start(t, append(shared, "LENS_BACKEND_ID", "backend-b")...)
	ctx := context.Background()
	owned := func(t *testing.T, h *harness, method, path, owner string) {
		t.Helper()
		var prob map[string]any
		if code := call(t, method, h.url+path, "", &prob); code != 409 || !strings.Contains(toJSON(prob), owner) {
			t.Fatalf("%s %s: %d %s, want 409 naming %s", method, path, code, toJSON(prob), owner)
		}
	}

	var run map[string]any
	if code := call(t, "POST", a.url+"/runs", `{"deployment_execution_id":"exec-1"}`, &run); code != 202 || run["owner_backend_id"] != "backend-a" {
		t.Fatalf("create on a: %d %v", code, run)
	}
	id := run["id"].(string)
	owned(t, b, "POST", "/runs/"+id+"/cancel", `backend \"backend-a\"`)
	owned(t, b, "DELETE", "/runs/"+id, `backend \"backend-a\"`)
	if stored, _ := a.runs.Load(ctx, id); stored.Status != evalrun.StatusQueued || stored.Internal.CancelRequested {
		t.Fatalf("b's refused cancel changed the run: %s", stored.Status)
	}
	if code := call(t, "POST", a.url+"/runs/"+id+"/cancel", "", nil); code != 200 {
		t.Fatalf("cancel on the owner: %d", code)
	}
	owned(t, b, "DELETE", "/runs/"+id, `backend \"backend-a\"`)
	if code := call(t, "DELETE", a.url+"/runs/"+id, "", nil); code != 204 {
		t.Fatalf("delete on the owner: %d", code)
	}

	// A runner of b holds the lease of a run a created: while it does, the run is b's.
	if code := call(t, "POST", a.url+"/runs", `{"deployment_execution_id":"exec-1"}`, &run); code != 202 {
		t.Fatalf("create: %d", code)
	}
	claimed := run["id"].(string)
	if _, err := b.deps.Store.AcquireLease(ctx, evalrun.LeaseName(claimed), "backend-b/benchmark-runner-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	owned(t, a, "POST", "/runs/"+claimed+"/cancel", "backend-b/benchmark-runner-1")

	// Workflows: retry, cancel and delete on the other backend are 409 before any change.
	inv := &inventory.Repo{Store: a.deps.Store, Sealer: a.runs.Sealer}
	_, session, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "shared", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := inv.CreateConfiguration(ctx, inventory.ConfigurationSpec{Name: "cfg", SchemaVersion: inventory.ConfigurationSchemaV1,
		Type: inventory.ConfigurationGuide, Format: inventory.ConfigurationFormat, ProviderRef: "optimized-baseline",
		Content: []byte(`{"model":{"name":"m"},"decode":{"replicas":2}}`)})
	if err != nil {
		t.Fatal(err)
	}
	var wf map[string]any
	if code := call(t, "POST", a.url+"/evaluations", `{"cluster_session_id":"`+session.ID+`","benchmark_plans":[{"configuration_artifact_id":"`+cfg.ID+`"}]}`, &wf); code != 202 ||
		wf["owner_backend_id"] != "backend-a" {
		t.Fatalf("evaluation on a: %d %v", code, wf)
	}
	wfID := wf["id"].(string)
	for _, path := range []string{"/workflow-runs/" + wfID + "/retry", "/workflow-runs/" + wfID + "/cancel"} {
		owned(t, b, "POST", path, `backend \"backend-a\"`)
	}
	owned(t, b, "DELETE", "/workflow-runs/"+wfID, `backend \"backend-a\"`)
	stored, _, err := (&workflow.Repo{Store: a.deps.Store}).Get(ctx, wfID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != workflow.StatusQueued {
		t.Fatalf("b's refused requests changed the workflow: %s", stored.Status)
	}
	// The owner is refused only for the workflow's state (a queued workflow cannot be retried).
	var prob map[string]any
	if code := call(t, "POST", a.url+"/workflow-runs/"+wfID+"/retry", "", &prob); code != 409 || strings.Contains(toJSON(prob), "owned by") {
		t.Fatalf("retry on the owner: %d %s", code, toJSON(prob))
	}
}
