package simulationapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/state"
)

// deployedExecution puts a ready deployment execution serving endpoint (with endpointKey) in
// the harness's store, as the deployer does, and returns its id and cluster session.
func deployedExecution(t *testing.T, h *harness, endpoint, status string) (executionID, sessionID string) {
	t.Helper()
	ctx := context.Background()
	inv := &inventory.Repo{Store: h.server.Deps.Store, Sealer: mustSealer(t)}
	_, session, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "local-" + inventory.NewID()[:8], Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	e := inventory.Execution{ID: inventory.NewID(), ClusterSessionID: session.ID, Name: "qwen3-guide", Model: "Qwen/Qwen3-8B",
		Models: []string{"Qwen/Qwen3-8B", "other-model"}, Endpoint: endpoint, Namespace: "prism-sim",
		Ownership: inventory.OwnershipEvaluation, Status: status}
	if err := inv.PutExecution(ctx, e, endpointKey); err != nil {
		t.Fatal(err)
	}
	return e.ID, session.ID
}

// TestDeploymentModeResolvesTheExecution: endpoint_mode "deployment" sends the task to the
// endpoint the inventory's execution records, with the execution's key, and never probes the
// URL the caller gave; unknown ids are 404, a missing one or a model or session the execution
// does not have 422, an execution that is not ready 409. A rerun resolves the execution again.
func TestDeploymentModeResolvesTheExecution(t *testing.T) {
	h, sink, endpoint := taskHarness(t)
	var userHits atomic.Int32
	user := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		userHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(user.Close)
	execution, session := deployedExecution(t, h, endpoint, "")
	body := func(extra string) string {
		b := `{"name":"Trace simulation","scenario":"chat","endpoint_mode":"deployment","endpoint_url":"` + user.URL +
			`/v1","trace_dataset":"mooncake-conversation"`
		if extra != "" {
			b += "," + extra
		}
		return b + "}"
	}
	var out created
	if code := call(t, "POST", h.url+"/api/simulation/tasks", body(`"endpoint_deployment_execution_id":"`+execution+
		`","cluster_session_id":"`+session+`"`), &out); code != 202 {
		t.Fatalf("create: %d %+v", code, out)
	}
	task := out.Task
	if task.EndpointURL != endpoint || task.ModelName != "Qwen/Qwen3-8B" || task.EndpointMode != "deployment" ||
		task.EndpointDeploymentExecutionID == nil || *task.EndpointDeploymentExecutionID != execution ||
		task.EndpointNamespace == nil || *task.EndpointNamespace != "prism-sim" ||
		task.EndpointDeploymentName == nil || *task.EndpointDeploymentName != "qwen3-guide" {
		t.Fatalf("task not bound to the execution: %+v", task)
	}
	repo := &simtask.Repo{Store: h.server.Deps.Store, Sealer: mustSealer(t)}
	stored, err := repo.Load(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := repo.APIKey(stored); err != nil || key != endpointKey {
		t.Fatalf("the task's key = %q, %v (want the execution's)", key, err)
	}
	// model_name may name another model the execution serves.
	if code := call(t, "POST", h.url+"/api/simulation/tasks", body(`"endpoint_deployment_execution_id":"`+execution+
		`","model_name":"other-model"`), &out); code != 202 || out.Task.ModelName != "other-model" {
		t.Fatalf("create with another served model: %d %+v", code, out.Task)
	}
	_, otherSession := deployedExecution(t, h, endpoint, "")
	notReady, _ := deployedExecution(t, h, endpoint, "deleting")
	for name, tc := range map[string]struct {
		extra string
		code  int
		says  string
	}{
		"unknown execution":   {`"endpoint_deployment_execution_id":"` + inventory.NewID() + `"`, 404, ""},
		"no execution":        {"", 422, "endpoint_deployment_execution_id"},
		"unserved model":      {`"endpoint_deployment_execution_id":"` + execution + `","model_name":"gpt-x"`, 422, "model_name"},
		"unknown session":     {`"endpoint_deployment_execution_id":"` + execution + `","cluster_session_id":"` + inventory.NewID() + `"`, 404, ""},
		"another session":     {`"endpoint_deployment_execution_id":"` + execution + `","cluster_session_id":"` + otherSession + `"`, 422, "cluster_session_id"},
		"execution not ready": {`"endpoint_deployment_execution_id":"` + notReady + `"`, 409, "not ready"},
	} {
		resp := post(t, h.url+"/api/simulation/tasks", body(tc.extra))
		raw := readAll(t, resp)
		if resp.StatusCode != tc.code || !strings.Contains(raw, tc.says) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: %d %s, want %d naming %q", name, resp.StatusCode, raw, tc.code, tc.says)
		}
	}
	var rerun created
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+task.ID+"/rerun", `{}`, &rerun); code != 202 || rerun.Task.EndpointURL != endpoint {
		t.Fatalf("rerun: %d %+v", code, rerun.Task)
	}
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+task.ID+"/rerun",
		`{"endpoint_deployment_execution_id":"`+inventory.NewID()+`"}`, nil); code != 404 {
		t.Fatalf("rerun on an unknown execution: %d", code)
	}
	if n := userHits.Load(); n != 0 {
		t.Fatalf("the caller's endpoint_url was probed %d times in deployment mode", n)
	}
	if sink.count() != 3 {
		t.Fatalf("queued events: %d", sink.count())
	}
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestBackendMetricsIsAnObjectOnTheTask: a finished task's result carries "backend_metrics": {}
// when the backend reported none (the spec's example), and list items leave it out (NOTES.md).
func TestBackendMetricsIsAnObjectOnTheTask(t *testing.T) {
	h, _, endpoint := taskHarness(t)
	var out created
	if code := call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &out); code != 202 {
		t.Fatalf("create: %d", code)
	}
	repo := &simtask.Repo{Store: h.server.Deps.Store, Sealer: mustSealer(t)}
	if _, err := repo.Transition(context.Background(), out.TaskID, []string{simtask.StatusQueued}, simtask.StatusCompleted, state.Fence{},
		func(task *simtask.Task) error {
			task.Result = &simtask.Result{RunID: "trace-replayer-1", Backend: "trace-replayer", Summary: []byte(`{}`), Warnings: []string{}}
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	raw := readAll(t, get(t, h.url+"/api/simulation/tasks/"+out.TaskID))
	if !strings.Contains(raw, `"backend_metrics":{}`) {
		t.Fatalf("task: %s", raw)
	}
	if list := readAll(t, get(t, h.url+"/api/simulation/tasks")); strings.Contains(list, "backend_metrics") || !strings.Contains(list, `"run_id":"trace-replayer-1"`) {
		t.Fatalf("list: %s", list)
	}
}
