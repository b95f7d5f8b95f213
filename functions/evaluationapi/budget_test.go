package evaluationapi_test

import (
	"strings"
	"testing"
)

// TestRunOverTheMemoryBudgetIs422: the request that took the runner to 2.28 GB and the
// simulator to 3.16 GB (isl 131072 at concurrency 4096, each inside its own limit) is refused
// with a 422 that names the in-flight memory budget, and no run is stored.
func TestRunOverTheMemoryBudgetIs422(t *testing.T) {
	h := start(t)
	attack := strings.Replace(matrixRun, `"matrix":[{"isl":64,"osl":16}],"concurrency_stages":[{"concurrency":2,"num_requests":8}]`,
		`"matrix":[{"isl":131072,"osl":16}],"concurrency_stages":[{"concurrency":4096,"num_requests":4096}]`, 1)
	var problem map[string]any
	if code := call(t, "POST", h.url+"/runs", attack, &problem); code != 422 || !strings.Contains(toJSON(problem), "in-flight memory budget of 1024 MiB") {
		t.Fatalf("%d %v", code, problem)
	}
	var list struct {
		Total int `json:"total"`
	}
	if code := call(t, "GET", h.url+"/runs", "", &list); code != 200 || list.Total != 0 {
		t.Fatalf("runs after the refusal: %d %+v", code, list)
	}
}

// TestEventCreatedRunHasAnOwner: a run a run.requested event asked for is owned by the event's
// sender, never ownerless.
func TestEventCreatedRunHasAnOwner(t *testing.T) {
	h := start(t)
	data := `{"idempotency_key":"owned-1","deployment_execution_id":"exec-1","workload":"sanity_random.yaml"}`
	if code := postEvent(t, h.url, "owned-event-1", data); code/100 != 2 {
		t.Fatalf("event: %d", code)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if code := call(t, "GET", h.url+"/runs", "", &list); code != 200 || len(list.Items) != 1 || list.Items[0]["owner_user_id"] != "event:/lensfn/user" {
		t.Fatalf("%d %v", code, list.Items)
	}
}
