package evaluationapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	evaluationapi "github.com/lensfn/lensfn/functions/evaluation-api"
)

// The fuzz targets send arbitrary bodies, queries and events to every request decoder of the API
// through the real runtime (auth, limits, decoding, validation) and check the contract: never an
// internal error, always a JSON answer, errors as problem+json.

// fuzzRequest sends one input to path (as the body, or as the query of a GET) and checks the answer.
func fuzzRequest(t *testing.T, base, method, path, input string, header map[string]string) {
	target, body := base+path, input
	if method == http.MethodGet {
		if !requestTargetSafe(input) {
			return // not sendable: net/http itself answers a malformed request line
		}
		target, body = base+path+"?"+input, ""
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		return // not a URL a client could send
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req) // fntest.AuthorizeDefaultClient gave it a token
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 502-504 blame an upstream honestly; anything else is ours.
	if resp.StatusCode >= 500 && resp.StatusCode != 502 && resp.StatusCode != 503 && resp.StatusCode != 504 {
		t.Fatalf("%s %s %q: %d %s", method, path, input, resp.StatusCode, raw)
	}
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s %s %q: %d without problem+json: %s", method, path, input, resp.StatusCode, raw)
	}
	if len(raw) > 0 && !json.Valid(raw) {
		t.Fatalf("%s %s %q: not JSON: %s", method, path, input, raw)
	}
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

// requestTargetSafe says whether a query can appear in an HTTP request line as it is: visible
// ASCII, no fragment.
func requestTargetSafe(q string) bool {
	for i := 0; i < len(q); i++ {
		if q[i] <= ' ' || q[i] >= 0x7f || q[i] == '#' {
			return false
		}
	}
	return true
}
