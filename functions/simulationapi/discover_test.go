package simulationapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDiscoverModels(t *testing.T) {
	const key = "sk-secret-123"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			if r.Header.Get("Authorization") != "Bearer "+key {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"Qwen/Qwen3-8B"},{"id":"Qwen/Qwen3-8B-Instruct"}]}`))
		case "/bad/v1/models":
			_, _ = w.Write([]byte(`<html>not a list</html>`))
		case "/nolist/v1/models":
			_, _ = w.Write([]byte(`{"models":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer upstream.Close()
	h := newHarness(t, map[string]string{"LENS_ENDPOINT_DENY": "127.0.0.2"})
	var ok struct {
		Endpoint string   `json:"endpoint"`
		Models   []string `json:"models"`
	}
	body := `{"endpoint_url":"` + upstream.URL + `/v1","api_key":"` + key + `"}`
	if code := call(t, "POST", h.url+"/api/simulation/models/discover", body, &ok); code != 200 ||
		ok.Endpoint != upstream.URL+"/v1" || strings.Join(ok.Models, ",") != "Qwen/Qwen3-8B,Qwen/Qwen3-8B-Instruct" {
		t.Fatalf("%d %+v", code, ok)
	}
	cases := []struct {
		name, body, detail string
		code               int
	}{
		// Every failure reads the same, so the API cannot map ports, statuses or auth.
		// The message says whether a key was sent.
		{"wrong key", `{"endpoint_url":"` + upstream.URL + `","api_key":"nope"}`, "with this key within", 400},
		{"no key", `{"endpoint_url":"` + upstream.URL + `/v1"}`, "without a key within", 400},
		{"not a list", `{"endpoint_url":"` + upstream.URL + `/bad"}`, "is unreachable", 400},
		{"no data", `{"endpoint_url":"` + upstream.URL + `/nolist/v1"}`, "is unreachable", 400},
		{"404", `{"endpoint_url":"` + upstream.URL + `/missing"}`, "is unreachable", 400},
		{"closed port", `{"endpoint_url":"http://127.0.0.1:1/v1","api_key":"` + key + `"}`, "is unreachable", 400},
		{"denied by policy", `{"endpoint_url":"http://127.0.0.2:1/v1"}`, "not allowed by this installation", 400},
		{"metadata", `{"endpoint_url":"http://169.254.169.254/v1"}`, "not allowed by this installation", 400},
		{"not a URL", `{"endpoint_url":"ftp://x"}`, "http(s) URL", 422},
		{"credentials in URL", `{"endpoint_url":"http://u:p@127.0.0.1/v1"}`, "credentials", 422},
		{"missing", `{}`, "field required", 422},
		{"key too long", `{"endpoint_url":"http://x","api_key":"` + strings.Repeat("k", 4097) + `"}`, "4096", 422},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var prob map[string]any
			code := call(t, "POST", h.url+"/api/simulation/models/discover", tc.body, &prob)
			raw := strings.ToLower(strings.Join([]string{anyString(prob["detail"])}, ""))
			if code != tc.code || !strings.Contains(raw, strings.ToLower(tc.detail)) {
				t.Fatalf("%d %v", code, prob)
			}
			if strings.Contains(raw, key) {
				t.Fatal("the api key leaked into the response")
			}
		})
	}
}

func anyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				parts = append(parts, anyString(m["msg"]))
			}
		}
		return strings.Join(parts, "; ")
	}
	return ""
}
