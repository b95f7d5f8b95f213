package evaluationapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
)

// The fuzz targets send arbitrary bodies, queries and events to every request decoder of the API
// through the real runtime (auth, limits, decoding, validation) and check the contract: never an
// internal error, always a JSON answer, errors as problem+json.

// fuzzRequest sends one input with the token fntest.AuthorizeDefaultClient gave the default client.
func fuzzRequest(t *testing.T, base, method, path, input string, header map[string]string) {
	fntest.CheckFuzzedAnswer(t, http.DefaultClient.Transport, fntest.FuzzRequest{Method: method, URL: base + path, Input: input, Header: header})
}

func fuzzRoute(f *testing.F, method, path string, seeds ...string) {
	// Endpoints only on localhost: nothing a fuzzed body names leaves loopback or asks DNS.
	h := start(f, "LENS_ENDPOINT_ALLOW", "localhost")
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) { fuzzRequest(t, h.url, method, path, input, nil) })
}

const runSeed = `{"deployment_execution_id":"exec-1","workload":"sanity_random.yaml","harness":"inference-perf"}`

func FuzzCreateRun(f *testing.F) {
	fuzzRoute(f, "POST", "/runs", runSeed,
		`{"endpoint_url":"http://localhost:1/v1","model_name":"m","api_key":"k","workload":"sanity_random.yaml"}`,
		`{"deployment_execution_id":"exec-1","parallelism":1e308,"accelerator_profile":null}`,
		`{"deployment_execution_id":"exec-1","workload_yaml":"a: [[[[1]]]]","description":"\u0000"}`,
		`{"endpoint_url":"http://169.254.169.254/v1"}`, `[]`, `null`, `{"workload":1}`, `{"x":{}}`)
}

func FuzzTimingEstimate(f *testing.F) {
	fuzzRoute(f, "POST", "/timing-estimate", `{"workload":"sanity_random.yaml"}`,
		`{"harness":"inference-perf","workload":"chatbot_synthetic.yaml","parallelism":-1}`,
		`{"duration_seconds":1e308}`, `{}`, `[1]`, `"x"`)
}

func FuzzListRunsQuery(f *testing.F) {
	fuzzRoute(f, "GET", "/runs", "status=queued&limit=50&offset=0", "limit=-1", "limit=1e9", "stauts=queued", "offset=%00")
}

// Events reach the same decoders as POST /runs through the broker's delivery: a bad event is a
// 400 (never redelivered), never a 500 that the broker would retry forever.
func FuzzRunRequestedEvent(f *testing.F) {
	h := start(f, "LENS_ENDPOINT_ALLOW", "localhost")
	base := strings.TrimSuffix(h.url, evaluationapi.Prefix) // the events route is outside the prefix
	for _, s := range []string{
		`{"idempotency_key":"k1","deployment_execution_id":"exec-1","workload":"sanity_random.yaml"}`,
		`{"idempotency_key":"","deployment_execution_id":"exec-1"}`,
		`{"idempotency_key":1}`, `{"idempotency_key":"k2","x":1}`, `null`, `[]`, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		fuzzRequest(t, base, "POST", "/events", input, map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "fuzz",
			"Ce-Source": "/lensfn/fuzz", "Ce-Type": "dev.lensfn.evaluation.run.requested.v1"})
	})
}
