package openapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

// TestTheDocumentRefusesWhatTheDecodersRefuse sends bodies just outside the decoders' limits:
// evaluation-api must refuse each (422, or 400 for a name it does not know) and the document's
// request schema must refuse it too, so the bounds, enums and closed objects in the document
// are the handlers' own.
func TestTheDocumentRefusesWhatTheDecodersRefuse(t *testing.T) {
	a := apis[slices.IndexFunc(apis, func(a api) bool { return a.name == evaluationapi.Name })]
	_, c, s := servedBy(t, a)
	token := fntest.Token(t, s.server)
	plans := func(n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = `{"configuration_artifact_id":"c"}`
		}
		return strings.Join(out, ",")
	}
	evaluation := func(fields string) string {
		return `{"cluster_session_id":"s","benchmark_plans":[` + plans(1) + `]` + fields + `}`
	}
	refused := []struct{ route, body string }{
		{eval + "/workflow-runs", `{"model":"m","cluster_session_id":"s","replicas":0}`},
		{eval + "/workflow-runs", `{"model":"","cluster_session_id":"s"}`},
		{eval + "/workflow-runs", `{"model":"m","cluster_session_id":"s","colour":"red"}`},
		{eval + "/evaluations", `{"cluster_session_id":"s","benchmark_plans":[]}`},
		{eval + "/evaluations", `{"cluster_session_id":"s","benchmark_plans":[` + plans(21) + `]}`},
		{eval + "/evaluations", evaluation(`,"name":""`)},
		{eval + "/evaluations", evaluation(`,"unknown":1`)},
		{eval + "/evaluations", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"c","baseline_types":["fastest"]}]}`},
		{eval + "/evaluations", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"c","baseline_parameters":{"direct-vllm":{"replicas":33}}}]}`},
		{eval + "/evaluations", `{"cluster_session_id":"s","benchmark_plans":[{"configuration_artifact_id":"c","benchmark":{"parallelism":33}}]}`},
		{eval + "/runs", `{"deployment_execution_id":"exec-1","matrix":[{"isl":0,"osl":16}]}`},
		{eval + "/runs", `{"deployment_execution_id":"exec-1","concurrency_stages":[{"concurrency":5000,"num_requests":1}]}`},
		{eval + "/runs", `{"deployment_execution_id":"exec-1","workload":"../etc/passwd"}`},
		{eval + "/runs", `{"deployment_execution_id":"exec-1","sla_targets":{"ttft_percentile":"p42"}}`},
		{eval + "/runs", `{"deployment_execution_id":"exec-1","sla_targets":{"success_rate_min_percent":101}}`},
		{eval + "/workflow-runs", `{"model":"m","cluster_session_id":"s","parallelism":33}`},
		{eval + "/timing-estimate", `{"warmup_requests":51}`},
	}
	for _, r := range refused {
		req, _ := http.NewRequest("POST", s.url+r.route, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnprocessableEntity && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s %s: the handler answered %d, want 422 or 400", r.route, r.body, resp.StatusCode)
		}
		sch, err := c.Compile(pointer("paths", r.route, "post", "requestBody", "content", "application/json", "schema"))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal([]byte(r.body), &v); err != nil {
			t.Fatal(err)
		}
		if sch.Validate(v) == nil {
			t.Errorf("POST %s %s: the handler refuses it, the document accepts it", r.route, r.body)
		}
	}
}
