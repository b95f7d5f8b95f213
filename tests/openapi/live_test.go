package openapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

// call is one request whose answer must validate against the document: route is the
// documented path, sent with {id} replaced by the id an earlier call answered.
type call struct {
	method, route, body string
	status              int
	keepID              string // the answer's field whose value later paths use as {id}
}

// liveCalls are answers of the real functions, checked against the schemas their documents
// give them: the documents describe what the handlers write, not only what the spec shows.
var liveCalls = map[string][]call{
	"simulation-api": {
		{method: "GET", route: sim + "/backends", status: 200},
		{method: "GET", route: sim + "/scenarios", status: 200},
		{method: "GET", route: sim + "/trace-datasets", status: 200},
		{method: "GET", route: sim + "/tasks", status: 200},
	},
	"evaluation-api": {
		{method: "GET", route: eval + "/benchmark-defaults", status: 200},
		{method: "POST", route: eval + "/timing-estimate", body: `{"shared_prefix":{"num_groups":4,"num_prompts_per_group":5,"system_prompt_len":512,
			"question_len":128,"output_len":64,"stages":[{"rate":0.4,"duration":20}]}}`, status: 200},
		{method: "POST", route: eval + "/runs", body: `{"deployment_execution_id":"exec-1","matrix":[{"isl":64,"osl":16}],
			"concurrency_stages":[{"concurrency":2,"num_requests":8}],"sla_targets":{"ttft_ms":500}}`, status: 202, keepID: "id"},
		{method: "GET", route: eval + "/runs", status: 200},
		{method: "GET", route: eval + "/runs/{id}", status: 200},
		{method: "POST", route: eval + "/runs/{id}/cancel", status: 200},
	},
	"inventory-api": {
		{method: "POST", route: "/api/cluster/clusters", body: `{"name":"lab","kind":"local"}`, status: 201, keepID: "id"},
		{method: "GET", route: "/api/cluster/clusters", status: 200},
		{method: "GET", route: "/api/cluster/clusters/{id}", status: 200},
		{method: "POST", route: "/api/cluster/clusters/{id}/sessions", status: 201},
		{method: "GET", route: "/api/v1/deployments/executions", status: 200},
		{method: "GET", route: "/api/v1/model-services", status: 200},
		{method: "GET", route: "/api/v1/configurations", status: 200},
	},
}

func TestLiveAnswersValidateAgainstTheDocuments(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			_, c, s := servedBy(t, a)
			token := fntest.Token(t, s.server)
			id := ""
			for _, cl := range liveCalls[a.name] {
				path := strings.ReplaceAll(cl.route, "{id}", id)
				body := checkAnswer(t, c, s, token, cl.method, cl.route, path, cl.body, cl.status)
				if cl.keepID != "" {
					id, _ = body[cl.keepID].(string)
				}
			}
			// A problem answer fits the document's Problem schema.
			resp, err := http.Get(s.url + a.docPath[:strings.LastIndex(a.docPath, "/")] + "/no-such-route")
			if err != nil {
				t.Fatal(err)
			}
			var prob any
			_ = json.NewDecoder(resp.Body).Decode(&prob)
			resp.Body.Close()
			sch, err := c.Compile(pointer("components", "schemas", "Problem"))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(prob); err != nil {
				t.Errorf("a 404 problem does not fit Problem: %v", err)
			}
		})
	}
}

// send makes one request with the token (a JSON body when body is not empty) and returns the
// answer's status and body.
func send(t *testing.T, s started, token, method, path, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, raw
}

// checkAnswer sends one request, insists on its status and checks the JSON object it answers
// against the schema the document gives route's response with that status.
func checkAnswer(t *testing.T, c *jsonschema.Compiler, s started, token, method, route, path, body string, status int) map[string]any {
	t.Helper()
	name := method + " " + path
	code, raw := send(t, s, token, method, path, body)
	if code != status {
		t.Fatalf("%s: %d %s", name, code, raw)
	}
	var answer map[string]any
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fits(t, c, name, route, method, status, answer)
	return answer
}

// fits checks v against the schema of route's response with status.
func fits(t *testing.T, c *jsonschema.Compiler, name, route, method string, status int, v any) {
	t.Helper()
	sch, err := c.Compile(pointer("paths", route, strings.ToLower(method), "responses", fmt.Sprint(status), "content", "application/json", "schema"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := sch.Validate(v); err != nil {
		raw, _ := json.Marshal(v)
		t.Errorf("%s: the answer does not fit the document:\n%v\n%.3000s", name, err, raw)
	}
}
