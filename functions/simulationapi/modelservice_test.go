package simulationapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/simtask"
)

// publishedService puts a Model Service with one healthy member (the endpoint, with its key) in
// the harness's store, as inventory-api would, and returns the group id and its access key.
func publishedService(t *testing.T, h *harness, endpoint string) (groupID, executionID, accessKey string) {
	t.Helper()
	ctx := context.Background()
	inv := &inventory.Repo{Store: h.server.Deps.Store, Sealer: mustSealer(t)}
	_, session, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	e := inventory.Execution{ID: inventory.NewID(), ClusterSessionID: session.ID, Name: "qwen", Model: "Qwen/Qwen3-8B",
		Endpoint: endpoint, Namespace: "prism-sim", Ownership: inventory.OwnershipExistingEndpoint}
	if err := inv.PutExecution(ctx, e, endpointKey); err != nil {
		t.Fatal(err)
	}
	g, accessKey, err := inv.CreateModelService(ctx, inventory.ModelServiceSpec{Name: "qwen", PublishedName: "Qwen/Qwen3-8B",
		ClusterSessionID: session.ID, MemberExecutionIDs: []string{e.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.RecordProbes(ctx, g.ID, []inventory.Probe{{ExecutionID: e.ID, Healthy: true, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	return g.ID, e.ID, accessKey
}

func TestATaskNamingAModelServiceTargetsItsActiveMember(t *testing.T) {
	h, sink, endpoint := taskHarness(t)
	group, execution, accessKey := publishedService(t, h, endpoint)
	// The spec's placeholders: a syntactically valid URL and any model name are replaced.
	body := strings.NewReplacer(endpoint, "http://model-service.internal", "Qwen/Qwen3-8B", "qwen3-8b", endpointKey, accessKey).
		Replace(createBody(endpoint, `"model_service_group_id":"`+group+`"`))
	var out created
	if code := call(t, "POST", h.url+"/api/simulation/tasks", body, &out); code != 202 {
		t.Fatalf("create: %d %+v", code, out)
	}
	task := out.Task
	if task.EndpointURL != endpoint || task.ModelName != "Qwen/Qwen3-8B" || task.EndpointMode != "deployment" ||
		task.EndpointDeploymentExecutionID == nil || *task.EndpointDeploymentExecutionID != execution ||
		task.EndpointNamespace == nil || *task.EndpointNamespace != "prism-sim" {
		t.Fatalf("task not bound to the member: %+v", task)
	}
	// The task carries the member's key for its requests; the access key is not kept.
	repo := &simtask.Repo{Store: h.server.Deps.Store, Sealer: mustSealer(t)}
	stored, err := repo.Load(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := repo.APIKey(stored); err != nil || key != endpointKey {
		t.Fatalf("the task's key = %q, %v", key, err)
	}
	if sink.count() != 1 {
		t.Fatalf("queued events: %d", sink.count())
	}

	// Rerun bound to the group again.
	var rerun created
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+task.ID+"/rerun",
		`{"model_service_group_id":"`+group+`","api_key":"`+accessKey+`"}`, &rerun); code != 202 || rerun.Task.EndpointURL != endpoint {
		t.Fatalf("rerun: %d %+v", code, rerun)
	}

	for name, tc := range map[string]struct {
		key  string
		code int
	}{"no key": {"", 401}, "another key": {inventory.AccessKeyPrefix + "x", 403}, "the endpoint's key": {endpointKey, 403}} {
		b := strings.Replace(createBody(endpoint, `"model_service_group_id":"`+group+`"`), `"api_key":"`+endpointKey+`"`, `"api_key":"`+tc.key+`"`, 1)
		if code := call(t, "POST", h.url+"/api/simulation/tasks", b, nil); code != tc.code {
			t.Errorf("%s: %d, want %d", name, code, tc.code)
		}
		if code := call(t, "POST", h.url+"/api/simulation/tasks/"+task.ID+"/rerun", `{"model_service_group_id":"`+group+`","api_key":"`+tc.key+`"}`, nil); code != tc.code {
			t.Errorf("rerun, %s: %d, want %d", name, code, tc.code)
		}
	}
}

func mustSealer(t *testing.T) *secret.Sealer {
	t.Helper()
	key, _ := secret.ParseKey(testSecretKey)
	s, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
