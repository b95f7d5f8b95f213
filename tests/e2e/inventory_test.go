package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInventoryOverTheLocalStack registers the stack's own simulator as a deployment execution
// in the local cluster's session, publishes it as a Model Service, queues a simulation task on
// that service and stores a configuration, all through the ingress.
func TestInventoryOverTheLocalStack(t *testing.T) {
	stack := startStack(t, stackOptions{only: []string{"inventory-api", "inference-sim", "simulation-api"},
		env: map[string]string{"LENS_MEMBER_PROBE_INTERVAL": "200ms"}})
	if stack.LocalSessionID == "" {
		t.Fatal("the stack did not register the local cluster")
	}
	api := stack.APIURL
	simURL, _ := stack.FunctionURL("inference-sim")

	var clusters struct {
		Items []struct {
			Name      string `json:"name"`
			Kind      string `json:"kind"`
			SessionID string `json:"sessionId"`
		} `json:"items"`
	}
	code, body := get(t, api+"/api/cluster/clusters?name=local")
	if code != 200 || json.Unmarshal([]byte(body), &clusters) != nil || len(clusters.Items) != 1 ||
		clusters.Items[0].SessionID != stack.LocalSessionID || clusters.Items[0].Kind != "local" {
		t.Fatalf("local cluster: %d %s", code, body)
	}

	reg := `{"cluster_session_id":"` + stack.LocalSessionID + `","name":"stack-sim","model":"fake-model","endpoint":"` + simURL + `/v1"}`
	code, body = post(t, api+"/api/v1/deployments/executions", "application/json", reg, nil)
	var exec struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		Ownership string `json:"deployment_ownership"`
		Endpoint  string `json:"endpoint"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &exec) != nil || exec.Status != "ready" || exec.Ownership != "existing-endpoint" {
		t.Fatalf("register the simulator: %d %s", code, body)
	}
	wrongModel := strings.Replace(reg, "fake-model", "not-served", 1)
	if code, body := post(t, api+"/api/v1/deployments/executions", "application/json", wrongModel, nil); code != 400 {
		t.Fatalf("a model the simulator does not serve: %d %s", code, body)
	}
	if code, body := get(t, api+"/api/v1/deployments/executions/"+exec.ID); code != 200 || !strings.Contains(body, simURL) {
		t.Fatalf("get execution: %d %s", code, body)
	}

	svc := `{"name":"chat","published_name":"fake-model","cluster_session_id":"` + stack.LocalSessionID + `","member_execution_ids":["` + exec.ID + `"]}`
	code, body = post(t, api+"/api/v1/model-services", "application/json", svc, nil)
	var group struct {
		ID           string  `json:"id"`
		AccessKey    string  `json:"access_key"`
		ActiveMember *string `json:"active_member_execution_id"`
		Status       string  `json:"status"`
	}
	if code != 201 || json.Unmarshal([]byte(body), &group) != nil || !strings.HasPrefix(group.AccessKey, "lens-mk-") ||
		group.ActiveMember == nil || *group.ActiveMember != exec.ID || group.Status != "available" {
		t.Fatalf("publish: %d %s", code, body)
	}
	fnURL, _ := stack.FunctionURL("inventory-api")
	eventually(t, 30*time.Second, "the health loop to probe the member", func() bool {
		v := metric(t, fnURL, `lens_inventory_member_probes_total{outcome="healthy"}`)
		return v != "" && v != "1"
	})
	if _, body := get(t, api+"/api/v1/model-services/"+group.ID); strings.Contains(body, group.AccessKey) {
		t.Fatal("the access key is shown after creation")
	}

	// A simulation task naming the group is bound to the simulator, authorised by the access key.
	// It replays the generated dataset every test stack has: nothing is downloaded.
	task := `{"scenario":"chat","endpoint_url":"http://placeholder.invalid/v1","model_name":"any","trace_dataset":"` + generatedMooncake + `",
	  "model_service_group_id":"` + group.ID + `","api_key":"` + group.AccessKey + `"}`
	code, body = post(t, api+"/api/simulation/tasks", "application/json", task, nil)
	var queued struct {
		Task struct {
			EndpointURL  string `json:"endpoint_url"`
			ModelName    string `json:"model_name"`
			EndpointMode string `json:"endpoint_mode"`
			ExecutionID  string `json:"endpoint_deployment_execution_id"`
		} `json:"task"`
	}
	if code != 202 || json.Unmarshal([]byte(body), &queued) != nil || queued.Task.EndpointURL != simURL+"/v1" ||
		queued.Task.ModelName != "fake-model" || queued.Task.EndpointMode != "deployment" || queued.Task.ExecutionID != exec.ID {
		t.Fatalf("task on the model service: %d %s", code, body)
	}
	if code, body := post(t, api+"/api/simulation/tasks", "application/json", strings.Replace(task, group.AccessKey, "lens-mk-wrong", 1), nil); code != 403 {
		t.Fatalf("task with a wrong access key: %d %s", code, body)
	}

	conf := `{"name":"g","schema_version":"deployable-configuration.v1","type":"guide","format":"lensfn","provider_ref":"p","content":{"model":{"name":"fake-model"}}}`
	if code, body := post(t, api+"/api/v1/configurations", "application/json", conf, nil); code != 201 || !strings.Contains(body, `"checksum":"sha256:`) {
		t.Fatalf("configuration: %d %s", code, body)
	}

	// Deleting follows the dependencies: the group first, then its member.
	del := func(path string) int {
		req, _ := http.NewRequest(http.MethodDelete, api+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := del("/api/v1/deployments/executions/" + exec.ID); code != 409 {
		t.Fatalf("delete a member: %d", code)
	}
	if code := del("/api/v1/model-services/" + group.ID); code != 204 {
		t.Fatalf("delete the group: %d", code)
	}
	if code := del("/api/v1/deployments/executions/" + exec.ID); code != 204 {
		t.Fatalf("delete the execution: %d", code)
	}
}
