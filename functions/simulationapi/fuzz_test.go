package simulationapi_test

import (
	"testing"

	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

// The fuzz targets send arbitrary bodies and queries to every request decoder of the API
// through the real runtime (auth, limits, decoding, validation) and check the contract: never an
// internal error, always a JSON answer, errors as problem+json.

func fuzzRoute(f *testing.F, method, path string, seeds ...string) {
	// Endpoints only on localhost: nothing a fuzzed URL names leaves loopback or asks DNS.
	h, _, _ := taskHarnessWith(f, map[string]string{"LENS_ENDPOINT_ALLOW": "localhost"})
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		fntest.CheckFuzzedAnswer(t, nil, fntest.FuzzRequest{Method: method, URL: h.url + path, Input: input,
			Header: map[string]string{"Authorization": "Bearer " + h.token}})
	})
}

func FuzzCreateTask(f *testing.F) {
	fuzzRoute(f, "POST", "/api/simulation/tasks",
		`{"scenario":"chat","endpoint_url":"http://localhost:1/v1","model_name":"m","trace_dataset":"mooncake-conversation"}`,
		`{"scenario":"chat","endpoint_url":"http://localhost:1/v1","model_name":"m","trace_dataset":"mooncake-conversation","scale_factor":5e-324}`,
		`{"duration_seconds":1e308,"trace_end_seconds":-0,"backend_options":{"a":[[[[1]]]]}}`,
		`{"name":"\u0000","description":null,"trace_path":"../../secret.key"}`, `[]`, `null`, `{"scenario":1}`)
}

func FuzzRerunTask(f *testing.F) {
	fuzzRoute(f, "POST", "/api/simulation/tasks/0123abcd/rerun", ``, `{}`, `{"endpoint_url":"http://localhost:1/v1"}`, `{"api_key":null}`)
}

func FuzzDiscoverModels(f *testing.F) {
	fuzzRoute(f, "POST", "/api/simulation/models/discover", `{"endpoint_url":"http://localhost:1/v1"}`,
		`{"endpoint_url":"http://169.254.169.254/v1","api_key":"k"}`, `{"endpoint_url":"ftp://x"}`)
}

func FuzzDownloadDataset(f *testing.F) {
	fuzzRoute(f, "POST", "/api/simulation/trace-datasets/download", `{"dataset":"nope"}`, `{"dataset":"mooncake-arxiv","force":"yes"}`)
}

func FuzzListTasksQuery(f *testing.F) {
	fuzzRoute(f, "GET", "/api/simulation/tasks", "status=queued,running&limit=500&offset=0",
		"created_after=2026-01-01T00:00:00Z&search=%00", "limit=-1", "stauts=running")
}

func FuzzTimelineQuery(f *testing.F) {
	fuzzRoute(f, "GET", "/api/simulation/trace-datasets/mooncake-conversation/timeline", "bins=60", "bins=1e9", "bins=")
}

func FuzzResponseCodeIssuesQuery(f *testing.F) {
	fuzzRoute(f, "GET", "/api/simulation/tasks/0123abcd/response-code-issues", "status_code=500", "status_code=unknown&limit=501")
}
