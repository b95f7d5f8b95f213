package inferencesim

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The route table answers a known path asked with another method with an OpenAI-style 405
// naming its methods, an unknown path with a 404, and any method on the probes.
func TestRouteTableMethods(t *testing.T) {
	ts := startSim(t)
	for path, want := range map[string]string{
		"/v1/chat/completions": "use POST", "/v1/completions": "use POST", "/v1/responses": "use POST",
		"/v1/models": "use GET", "/v1/load_lora_adapter": "use POST", "/v1/unload_lora_adapter": "use POST",
		"/v1/embeddings": "use POST", "/tokenize": "use POST", "/admin/config": "use GET or POST",
	} {
		req, _ := http.NewRequest(http.MethodDelete, ts.url()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != 405 || !strings.Contains(body, `"message":"Method not allowed, `+want+`"`) || !strings.Contains(body, `"code":405`) {
			t.Errorf("DELETE %s: %d %s", path, resp.StatusCode, body)
		}
	}
	if s, body := get(t, ts.url()+"/v2/nothing"); s != 404 || !strings.Contains(body, `"message":"Not Found: /v2/nothing"`) {
		t.Errorf("unknown path: %d %s", s, body)
	}
	for _, path := range []string{"/health", "/ready", "/health/ready", "/metrics"} {
		if s, _, _ := post(t, ts.url()+path, ""); s != 200 {
			t.Errorf("POST %s: %d", path, s)
		}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
