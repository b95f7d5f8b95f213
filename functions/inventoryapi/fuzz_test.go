package inventoryapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
)

// The fuzz targets send arbitrary bodies and queries to every request decoder of the API through
// the real runtime (auth, limits, decoding, validation) and check the contract: never an internal
// error, always a JSON answer, errors as problem+json. The session the bodies may name exists, so
// the fuzzer reaches past "unknown session" into the registration code.

func fuzzRoute(f *testing.F, method, path string, seeds ...string) {
	// Endpoints only on localhost: nothing a fuzzed body names leaves loopback or asks DNS.
	h := newHarnessEnv(f, quietConfig, map[string]string{"LENS_ENDPOINT_ALLOW": "localhost"})
	session := fuzzSession(f, h)
	for _, s := range seeds {
		f.Add(strings.ReplaceAll(s, "SESSION", session))
	}
	f.Fuzz(func(t *testing.T, input string) {
		fntest.CheckFuzzedAnswer(t, nil, fntest.FuzzRequest{Method: method, URL: h.url + strings.ReplaceAll(path, "SESSION", session),
			Input: input, Header: map[string]string{"Authorization": "Bearer " + h.token}})
	})
}

// fuzzSession creates a local cluster and returns its session id.
func fuzzSession(f *testing.F, h *harness) string {
	req, _ := http.NewRequest("POST", h.url+"/api/cluster/clusters", strings.NewReader(`{"name":"fuzz","kind":"local","namespace":"lens-dev"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.Fatal(err)
	}
	defer resp.Body.Close()
	var c inventory.Cluster
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 201 || c.SessionID == "" {
		f.Fatalf("create cluster: %d %v", resp.StatusCode, err)
	}
	return c.SessionID
}

func FuzzCreateCluster(f *testing.F) {
	fuzzRoute(f, "POST", "/api/cluster/clusters", `{"name":"x","kind":"local"}`,
		`{"name":"k","kind":"kubernetes","namespace":"eval","kubeconfig":"apiVersion: v1\nkind: Config\n"}`, `{"name":"t","kind":"kubernetes","kubeconfig":"{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://k\"}}],\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\"}}],\"current-context\":\"x\"}"}`,
		`{"name":"x","kind":"local","extra":1}`, `{"name":"","kind":"docker"}`, `[]`, `null`, `{"name":1e308}`)
}

func FuzzOpenSession(f *testing.F) {
	fuzzRoute(f, "POST", "/api/cluster/clusters/nope/sessions", ``, `{}`, `{"x":1}`, `[]`)
}

func FuzzCreateExecution(f *testing.F) {
	fuzzRoute(f, "POST", "/api/v1/deployments/executions",
		`{"cluster_session_id":"SESSION","name":"sim","model":"m","endpoint":"http://localhost:1/v1"}`,
		`{"cluster_session_id":"SESSION","name":"sim","model":"m","endpoint":"http://localhost:1/v1","api_key":"k","namespace":"n"}`,
		`{"cluster_session_id":"SESSION","endpoint":"http://169.254.169.254/v1"}`, `{"endpoint":"ftp://x"}`, `{"name":null}`)
}

func FuzzCreateModelService(f *testing.F) {
	fuzzRoute(f, "POST", "/api/v1/model-services",
		`{"name":"svc","published_name":"m","cluster_session_id":"SESSION","member_execution_ids":["a","b"]}`,
		`{"name":"svc","published_name":"m","cluster_session_id":"SESSION","member_execution_ids":[]}`, `{"member_execution_ids":[1]}`)
}

func FuzzCreateConfiguration(f *testing.F) {
	fuzzRoute(f, "POST", "/api/v1/configurations",
		`{"name":"c","schema_version":"deployable-configuration.v1","type":"optimized-baseline","format":"json","provider_ref":"optimized-baseline","content":{"model":{"name":"m"},"decode":{"replicas":2}}}`,
		`{"name":"c","type":"pd-disaggregation","content":{"model":{"name":"m"},"decode":{"replicas":1e308},"prefill":{"replicas":-1}},"provenance":{"a":[[[[1]]]]}}`,
		`{"content":"x"}`, `{"content":null}`)
}

func FuzzListQueries(f *testing.F) {
	// One target over the four list routes: the first byte of the input picks the route.
	routes := []string{"/api/cluster/clusters", "/api/v1/deployments/executions", "/api/v1/model-services", "/api/v1/configurations"}
	h := newHarnessEnv(f, quietConfig, map[string]string{"LENS_ENDPOINT_ALLOW": "localhost"})
	for _, s := range []string{"0limit=10&offset=0&name=x", "1status=ready&deployment_ownership=evaluation&model=m", "2published_name=m&status=x",
		"3type=optimized-baseline&checksum=abc&limit=-1", "1stauts=ready", "0limit=1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		if input == "" {
			return
		}
		fntest.CheckFuzzedAnswer(t, nil, fntest.FuzzRequest{Method: "GET", URL: h.url + routes[int(input[0])%len(routes)], Input: input[1:],
			Header: map[string]string{"Authorization": "Bearer " + h.token}})
	})
}
