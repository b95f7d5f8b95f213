package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// TestLiveWorkflowAnswersValidateAgainstTheDocument creates a workflow-run and an evaluation
// through evaluation-api and checks every answer about them (create, GET, list, details with
// its cases, a case cancel, and details with a comparison report) against the document.
func TestLiveWorkflowAnswersValidateAgainstTheDocument(t *testing.T) {
	a := apis[slices.IndexFunc(apis, func(a api) bool { return a.name == evaluationapi.Name })]
	_, c, s := servedBy(t, a)
	token := fntest.Token(t, s.server)
	ctx := context.Background()
	sealer, err := secret.FromEnv(s.key)
	if err != nil {
		t.Fatal(err)
	}
	inv := &inventory.Repo{Store: s.deps.Store, Sealer: sealer}
	_, session, err := inv.CreateCluster(ctx, inventory.ClusterSpec{Name: "local", Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := inv.CreateConfiguration(ctx, inventory.ConfigurationSpec{Name: "cfg", SchemaVersion: inventory.ConfigurationSchemaV1,
		Type: inventory.ConfigurationGuide, Format: inventory.ConfigurationFormat, ProviderRef: "optimized-baseline",
		Content: json.RawMessage(`{"model":{"name":"m"},"decode":{"replicas":2}}`)})
	if err != nil {
		t.Fatal(err)
	}

	// check sends one request and validates the answer (and an accepted body) against the document.
	check := func(method, route, path, body string, status int) map[string]any {
		t.Helper()
		answer := checkAnswer(t, c, s, token, method, route, path, body, status)
		if body != "" {
			validateRequest(t, c, method, route, body)
		}
		return answer
	}
	simple := check("POST", eval+"/workflow-runs", eval+"/workflow-runs",
		`{"model":"m","cluster_session_id":"`+session.ID+`","replicas":2,"workload":"sanity_random.yaml"}`, 202)
	check("GET", eval+"/workflow-runs/{id}", eval+"/workflow-runs/"+simple["id"].(string), "", 200)

	evaluation := check("POST", eval+"/evaluations", eval+"/evaluations",
		`{"name":"openapi","cluster_session_id":"`+session.ID+`","benchmark_plans":[{"id":"candidate","configuration_artifact_id":"`+cfg.ID+
			`","baseline_types":["direct-vllm","kubernetes-service"]}]}`, 202)
	id := evaluation["id"].(string)
	if cases, _ := evaluation["cases"].([]any); len(cases) < 2 {
		t.Fatalf("the evaluation has no generated cases: %v", evaluation)
	}
	check("GET", eval+"/workflow-runs/{id}", eval+"/workflow-runs/"+id, "", 200)
	list := check("GET", eval+"/workflow-runs", eval+"/workflow-runs", "", 200)
	if items, _ := list["items"].([]any); len(items) != 2 {
		t.Fatalf("the list holds %d workflows, want 2", len(items))
	}
	details := check("GET", eval+"/workflow-runs/{id}/details", eval+"/workflow-runs/"+id+"/details", "", 200)
	// One case on its own against the case component.
	first := details["cases"].([]any)[0].(map[string]any)["case"]
	caseSchema, err := c.Compile(pointer("components", "schemas", "EvaluationCase"))
	if err != nil {
		t.Fatal(err)
	}
	if err := caseSchema.Validate(first); err != nil {
		t.Errorf("a case does not fit EvaluationCase: %v", err)
	}
	check("POST", eval+"/workflow-runs/{id}/cases/{case_id}/cancel", eval+"/workflow-runs/"+id+"/cases/baseline-1/cancel", "", 200)

	// A finished evaluation's comparison report, as the orchestrator leaves it (details
	// rebuilds the stale report with comparison.Report).
	repo := &workflow.Repo{Store: s.deps.Store}
	if _, err := repo.Update(ctx, id, func(wf *workflow.Workflow) error {
		wf.Status = workflow.StatusRunning
		for i, c := range wf.AllCases() {
			c.Status = workflow.CaseSucceeded
			c.Metrics = json.RawMessage(fmt.Sprintf(`{"throughput_tps":100,"ttft_ms":%d}`, 10*(i+1)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Update(ctx, id, func(wf *workflow.Workflow) error {
		wf.Status = workflow.StatusSucceeded
		wf.Report = workflow.ReportJSON(`{"comparison_version":1,"comparisons":[]}`)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	details = check("GET", eval+"/workflow-runs/{id}/details", eval+"/workflow-runs/"+id+"/details", "", 200)
	report, _ := details["report"].(map[string]any)
	if comparisons, _ := report["comparisons"].([]any); report["comparison_version"] != float64(2) || len(comparisons) == 0 {
		t.Fatalf("no rebuilt report to validate: %v", details["report"])
	}
	check("GET", eval+"/workflow-runs/{id}", eval+"/workflow-runs/"+id, "", 200)
}

// validateRequest checks a request body the API accepted against the operation's request
// schema: the document must not refuse what the handler takes.
func validateRequest(t *testing.T, c *jsonschema.Compiler, method, route, body string) {
	t.Helper()
	sch, err := c.Compile(pointer("paths", route, strings.ToLower(method), "requestBody", "content", "application/json", "schema"))
	if err != nil {
		t.Fatalf("%s %s request: %v", method, route, err)
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s %s: an accepted request does not fit the document: %v", method, route, err)
	}
}
