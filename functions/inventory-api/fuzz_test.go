package inventoryapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

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
		target, body := h.url+strings.ReplaceAll(path, "SESSION", session), input
		if method == http.MethodGet {
			if !requestTargetSafe(input) {
				return // not sendable: net/http itself answers a malformed request line
			}
			target, body = target+"?"+input, ""
		}
		req, err := http.NewRequest(method, target, strings.NewReader(body))
		if err != nil {
			return // not a URL a client could send
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+h.token)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// 502-504 blame an upstream (an endpoint probed at registration) honestly; anything else is ours.
		if resp.StatusCode >= 500 && resp.StatusCode != 502 && resp.StatusCode != 503 && resp.StatusCode != 504 {
			t.Fatalf("%s %s %q: %d %s", method, path, input, resp.StatusCode, raw)
		}
		if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%s %s %q: %d without problem+json: %s", method, path, input, resp.StatusCode, raw)
		}
		if len(raw) > 0 && !json.Valid(raw) {
			t.Fatalf("%s %s %q: not JSON: %s", method, path, input, raw)
		}
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
		`{"name":"k","kind":"kubernetes","namespace":"eval","kubeconfig":"apiVersion: v1\nkind: Config\n"}`,
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
		if input == "" || !requestTargetSafe(input) {
			return
		}
		path := routes[int(input[0])%len(routes)]
		req, err := http.NewRequest("GET", h.url+path+"?"+input[1:], nil)
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+h.token)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 || (resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json") || !json.Valid(raw) {
			t.Fatalf("GET %s?%s: %d %s", path, input[1:], resp.StatusCode, raw)
		}
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
