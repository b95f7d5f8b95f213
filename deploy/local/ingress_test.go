package local

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestUpstreamErrorsSayWhatHappened: only a function that is really restarting is a 503; a
// running one that gave no answer is a 502 with the cause.
func TestUpstreamErrorsSayWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		alive    bool
		status   int
		contains string
	}{
		{false, 503, "is restarting"},
		{true, 502, "did not answer: connection reset by peer"},
	} {
		p := &process{name: "simulation-api", alive: tc.alive}
		w := httptest.NewRecorder()
		upstreamError(p)(w, httptest.NewRequest("POST", "/api/simulation/tasks", nil), errors.New("connection reset by peer"))
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.contains) || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("alive=%t: %d %s", tc.alive, w.Code, w.Body)
		}
	}
}

// TestIngressRoutesTheRootToTheConsole: a Service whose prefix is "/" gets every path no API
// prefix claims, while the APIs keep theirs, /healthz stays the ingress's own and an unknown
// /api/ path stays the ingress's problem+json 404.
func TestIngressRoutesTheRootToTheConsole(t *testing.T) {
	backend := func(name string) *process {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+" "+r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		port, _ := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
		return &process{name: name, port: port, alive: true}
	}
	s := &Stack{manifests: &Manifests{Services: []Service{
		{Name: "console", PathPrefix: "/"},
		{Name: "simulation-api", PathPrefix: "/api/simulation"},
	}}, procs: map[string]*process{"console": backend("console"), "simulation-api": backend("simulation-api")}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.startIngress(l)
	t.Cleanup(func() { _ = s.servers[0].Close() })
	base := "http://" + l.Addr().String()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]string{
		"/":                     "console /",
		"/tasks/abc":            "console /tasks/abc",
		"/static/console.css":   "console /static/console.css",
		"/api/simulation/tasks": "simulation-api /api/simulation/tasks",
		"/api/simulation":       "simulation-api /api/simulation",
		"/api/v1/evaluate/runs": `"not_found"`,
		"/healthz":              `"status":"ok"`,
	} {
		resp, err := noRedirect.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) || (want == `"not_found"`) != (resp.StatusCode == http.StatusNotFound) {
			t.Errorf("GET %s: %d %s, want %s", path, resp.StatusCode, body, want)
		}
	}
}
