package inferencesim

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
)

// adminCall sends a request to /admin/config with the given Host, Origin and Content-Type
// ("" leaves each out) and returns the status and body.
func adminCall(t *testing.T, base, method, host, origin, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+"/admin/config", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// TestAdminRefusesBrowserRequests: a page the operator opens cannot change the simulator's
// latencies or failure injection: a cross-origin text/plain POST (no preflight), a foreign
// Origin and a rebinding Host are refused before the body is read, and nothing changes.
func TestAdminRefusesBrowserRequests(t *testing.T) {
	ts := startSim(t, "--failure-injection-rate", "0")
	self := strings.TrimPrefix(ts.url(), "http://")
	const update = `{"failure-injection-rate":100}`
	refused := []struct {
		name, method, host, origin, contentType string
		status                                  int
		mention                                 string
	}{
		{"text/plain POST (a form's simple request)", "POST", "", "", "text/plain", 415, "application/json"},
		{"form POST", "POST", "", "", "application/x-www-form-urlencoded", 415, "application/json"},
		{"POST without a Content-Type", "POST", "", "", "", 415, "application/json"},
		{"foreign Origin", "POST", "", "http://evil.example", "application/json", 403, "cross-origin"},
		{"null Origin (a sandboxed frame)", "POST", "", "null", "application/json", 403, "cross-origin"},
		{"Origin on another port of the host", "POST", "", "http://127.0.0.1:1", "application/json", 403, "cross-origin"},
		{"rebinding Host", "POST", "evil.example:" + self[strings.LastIndex(self, ":")+1:], "", "application/json", 403, "does not answer host"},
		{"rebinding Host reading the settings", "GET", "rebind.attacker.example", "", "", 403, "does not answer host"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, body := adminCall(t, ts.url(), tc.method, tc.host, tc.origin, tc.contentType, update)
			if status != tc.status || !strings.Contains(body, tc.mention) || !strings.Contains(body, `"error"`) {
				t.Fatalf("%d %s, want %d mentioning %q", status, body, tc.status, tc.mention)
			}
		})
	}
	if _, body := adminCall(t, ts.url(), "GET", "", "", "", ""); !strings.Contains(body, `"failure-injection-rate":0`) {
		t.Fatalf("a refused request changed the settings: %s", body)
	}
	// The operator's own calls: JSON, no Origin or its own, a loopback or cluster-internal Host.
	for _, call := range [][3]string{{"", "", update}, {"", "http://" + self, `{"failure-injection-rate":1}`},
		{"inference-sim.lensfn.svc.cluster.local", "", `{"failure-injection-rate":2}`}, {"localhost", "", `{"failure-injection-rate":3}`}} {
		if status, body := adminCall(t, ts.url(), "POST", call[0], call[1], "application/json; charset=utf-8", call[2]); status != 200 {
			t.Fatalf("host %q origin %q: %d %s", call[0], call[1], status, body)
		}
	}
}

// TestAdminAnswersOnlyAllowedHosts: with LENS_ALLOWED_HOSTS (the local stack sets its loopback
// names) /admin answers those names only.
func TestAdminAnswersOnlyAllowedHosts(t *testing.T) {
	ts := startSimEnv(t, config.Environment{AllowedHosts: "127.0.0.1, localhost"})
	if status, _ := adminCall(t, ts.url(), "GET", "", "", "", ""); status != 200 {
		t.Fatalf("an allowed host: %d", status)
	}
	if status, body := adminCall(t, ts.url(), "GET", "inference-sim", "", "", ""); status != 403 || !strings.Contains(body, "LENS_ALLOWED_HOSTS") {
		t.Fatalf("a host outside the list: %d %s", status, body)
	}
}
