package openapi_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// extensions are the response fields Lensfn always writes that the spec's examples predate. An
// example may leave exactly these out; any other missing field, unknown field or wrong type
// fails the test.
var extensions = map[string]string{
	"trace_range": "GET /backends: how a format's trace_start/end_seconds are applied",
	"url":         "GET /trace-datasets: where a dataset is fetched from",
	"files":       "GET /trace-datasets: how many files a dataset has",
	"transferred": "POST /trace-datasets/download: whether this call fetched the file (README)",
	"source":      "POST /trace-datasets/download: upstream, mirror, generated or reused (README)",
	"kind":        "EvaluationWorkflowResponse: every workflow answer says kind workflow; the spec's abbreviated workflow examples leave it out",
	"created_at":  "EvaluationWorkflowResponse: every workflow answer has its creation time; the spec's abbreviated workflow examples leave it out",
}

// onlyExtensionsMissing reports whether every leaf of a validation error is a missing
// extension field.
func onlyExtensionsMissing(err error) bool {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return false
	}
	var leaves func(e *jsonschema.ValidationError) bool
	leaves = func(e *jsonschema.ValidationError) bool {
		if _, anyOf := e.ErrorKind.(*kind.AnyOf); anyOf {
			// One alternative fitting but for extension fields is enough (a nullable record).
			return slices.ContainsFunc(e.Causes, leaves)
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				if !leaves(c) {
					return false
				}
			}
			return true
		}
		req, ok := e.ErrorKind.(*kind.Required)
		if !ok {
			return false
		}
		for _, m := range req.Missing {
			if _, ext := extensions[m]; !ext {
				return false
			}
		}
		return true
	}
	return leaves(verr)
}

// target says which schema an example of the spec shows: the request body of an operation
// (status 0) or its response with that status.
type target struct {
	firstKey string // the example's first key, so a changed spec cannot shift the table silently
	method   string
	path     string
	status   int
}

const (
	sim  = "/api/simulation"
	eval = "/api/v1/evaluate"
)

// specExamples lists, in order, every JSON example of each spec file and what it shows.
var specExamples = map[string][]target{
	"simulation-api.zh.txt": {
		{"backends", "GET", sim + "/backends", 200},
		{"endpoint_url", "POST", sim + "/models/discover", 0},
		{"endpoint", "POST", sim + "/models/discover", 200},
		{"scenarios", "GET", sim + "/scenarios", 200},
		{"data_dir", "GET", sim + "/trace-datasets", 200},
		{"dataset", "POST", sim + "/trace-datasets/download", 0},
		{"artifact_uri", "POST", sim + "/trace-datasets/download", 200},
		{"dataset", "GET", sim + "/trace-datasets/{name}/timeline", 200},
		{"tasks", "GET", sim + "/tasks", 200},
		{"name", "POST", sim + "/tasks", 0},
		{"name", "POST", sim + "/tasks", 0},
		{"task_id", "POST", sim + "/tasks", 202},
		{"id", "GET", sim + "/tasks/{id}", 200},
		{"task_id", "GET", sim + "/tasks/{id}/response-code-issues", 200},
		{"task_id", "POST", sim + "/tasks/{id}/stop", 200},
		{"endpoint_url", "POST", sim + "/tasks/{id}/rerun", 0},
		{"task_id", "POST", sim + "/tasks/{id}/rerun", 202},
		{"task_id", "DELETE", sim + "/tasks/{id}", 200},
	},
	"evaluation-api.txt": {
		{"mode", "GET", eval + "/benchmark-defaults", 200},
		{"wait_timeout_seconds", "POST", eval + "/timing-estimate", 0},
		{"deployment_execution_id", "POST", eval + "/runs", 0},
		{"model_service_group_id", "POST", eval + "/runs", 0},
		{"kind", "POST", eval + "/runs", 202},
		{"items", "GET", eval + "/runs", 200},
		{"kind", "GET", eval + "/runs/{id}", 200},
		{"id", "POST", eval + "/runs/{id}/cancel", 200},
		{"model", "POST", eval + "/workflow-runs", 0},
		{"kind", "POST", eval + "/workflow-runs", 202},
		{"name", "POST", eval + "/evaluations", 0},
		{"kind", "POST", eval + "/evaluations", 202},
		{"items", "GET", eval + "/workflow-runs", 200},
		{"kind", "GET", eval + "/workflow-runs/{id}", 200},
		{"workflow", "GET", eval + "/workflow-runs/{id}/details", 200},
		{"kind", "POST", eval + "/workflow-runs/{id}/retry", 202},
		{"id", "POST", eval + "/workflow-runs/{id}/cancel", 200},
		{"id", "POST", eval + "/workflow-runs/{id}/cases/{case_id}/cancel", 200},
	},
}

// firstKey is the first key of a JSON object as written.
func firstKey(raw string) string {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(raw), "{"))
	if !strings.HasPrefix(rest, `"`) {
		return ""
	}
	key, _, _ := strings.Cut(rest[1:], `"`)
	return key
}

func TestEverySpecExampleValidatesAgainstItsSchema(t *testing.T) {
	dir := specDir(t)
	for _, a := range apis {
		if a.spec == "" {
			continue // inventory's routes are defined by issue 12, which has no JSON examples
		}
		t.Run(a.name, func(t *testing.T) {
			doc, c := served(t, a)
			paths := doc["paths"].(map[string]any)
			got := examples(t, filepath.Join(dir, a.spec))
			want := specExamples[a.spec]
			if len(got) != len(want) {
				t.Fatalf("%s has %d JSON examples, the table %d: assign every example a schema", a.spec, len(got), len(want))
			}
			for i, ex := range got {
				tg := want[i]
				name := fmt.Sprintf("%s:%d %s %s", a.spec, ex.line, tg.method, tg.path)
				if k := firstKey(ex.raw); k != tg.firstKey {
					t.Errorf("%s: the example starts with %q, the table expects %q", name, k, tg.firstKey)
					continue
				}
				item, ok := paths[tg.path].(map[string]any)
				if !ok || item[strings.ToLower(tg.method)] == nil {
					t.Errorf("%s: no such operation in the document", name)
					continue
				}
				ptr := pointer("paths", tg.path, strings.ToLower(tg.method), "requestBody", "content", "application/json", "schema")
				if tg.status != 0 {
					ptr = pointer("paths", tg.path, strings.ToLower(tg.method), "responses", fmt.Sprint(tg.status), "content", "application/json", "schema")
				}
				sch, err := c.Compile(ptr)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if err := sch.Validate(ex.value); err != nil && !(tg.status != 0 && onlyExtensionsMissing(err)) {
					t.Errorf("%s: the spec's example does not validate:\n%v", name, err)
				}
			}
		})
	}
}
