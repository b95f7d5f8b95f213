package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/lensfn/lensfn/functions/console"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// fakeAPI stands in for the ingress: it records what the console sent.
type fakeAPI struct {
	*httptest.Server
	mu     sync.Mutex
	auth   []string
	bodies map[string]string
	calls  map[string]int
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{bodies: map[string]string{}, calls: map[string]int{}}
	problem := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/simulation/tasks", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"tasks":[{"id":"t1","name":"first","status":"completed","model_name":"fake-model"}],"total":1}`)
	})
	mux.HandleFunc("POST /api/simulation/tasks", func(w http.ResponseWriter, _ *http.Request) {
		problem(w, 422, `{"type":"x","title":"Validation failed","status":422,"code":"validation_error",
			"detail":[{"loc":["body","endpoint_url"],"msg":"endpoint_url must be an http(s) URL","type":"url_invalid"}]}`)
	})
	mux.HandleFunc("GET /api/simulation/tasks/t1/events", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 1-0\nevent: status\ndata: {\"status\":\"running\",\"progress_percent\":50}\n\n: keep-alive\n\nid: 2-0\nevent: end\ndata: {\"status\":\"completed\"}\n\n")
	})
	mux.HandleFunc("POST /api/simulation/tasks/t1/stop", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"task_id":"t1","status":"cancelling"}`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/workflow-runs", func(w http.ResponseWriter, _ *http.Request) {
		problem(w, 404, `{"title":"Not found","status":404,"code":"not_found","detail":"no route GET /api/v1/evaluate/workflow-runs"}`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/workflow-runs/w1/details", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"workflow":{"id":"w1","name":"Qwen comparison","status":"succeeded"},
			"cases":[{"case":{"id":"guide-1","kind":"guide","status":"succeeded","evaluation_run_id":"run-1"},"deployment":{"id":"d1","status":"succeeded"}}],
			"report":{"comparison_version":2,"comparisons":[{"guide_case_id":"guide-1","baseline_case_id":"baseline-1","baseline_type":"direct-vllm",
			"sla":{"met":true,"checks":{}},"matrix_statistics":{"case_count":1,"rows":[],"geometric_mean_ratio":{"ttft_ms":0.5,"throughput_tps":1.25}},
			"parity":{"valid":false,"checks":{"accelerator_count":false},"reasons":["accelerator count differs: guide 2, baseline 1"],"guide_accelerators":2,"baseline_accelerators":1},
			"rate_stage_statistics":{"stage_count":1,"rows":[{"rate":4,"duration":2,"guide":{"throughput_tps":15.867,"ttft_ms":116.227},"baseline":{"throughput_tps":22.844,"ttft_ms":80.663},"ratio":{"throughput_tps":0.6946,"ttft_ms":1.4409}}]},
			"significance":{"confidence":0.95,"metrics":{
				"ttft_ms":{"guide":40.5,"baseline":81,"ratio":0.5,"ratio_ci_low":0.445,"ratio_ci_high":0.5575,"change_percent":-50,"change_percent_ci_low":-55.5,"change_percent_ci_high":-44.25,"higher_is_better":false,"verdict":"better"},
				"itl_ms":{"change_percent":100,"change_percent_ci_low":-80,"change_percent_ci_high":400,"higher_is_better":false,"verdict":"no significant difference"}}}}],
			"topology_comparisons":[{"left_case_id":"guide-1","right_case_id":"guide-2",
			"left":{"guide":"optimized-baseline","runtime":"inference-sim","replicas":2,"tensor_parallel_size":1},
			"right":{"guide":"baseline-vllm","runtime":"inference-sim","replicas":1,"tensor_parallel_size":1},
			"left_metrics":{"throughput_tps":1226.034,"ttft_ms":50.967},"right_metrics":{"throughput_tps":621.27,"ttft_ms":255.638},
			"ratio":{"throughput_tps":1.9734,"ttft_ms":0.1994},
			"matrix_statistics":{"rows":[{"isl":128,"osl":32,"concurrency":8,"guide":{"throughput_tps":1226.034},"baseline":{"throughput_tps":621.27},"ratio":{"throughput_tps":1.9734}}]}}]}}`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/workflow-runs/w2/details", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"workflow":{"id":"w2","name":"running comparison","status":"benchmarking"},"report":null,
			"cases":[{"case":{"id":"guide-1","kind":"guide","status":"benchmarking"}},{"case":{"id":"baseline-1","kind":"baseline","status":"succeeded"}}]}`)
	})
	mux.HandleFunc("POST /api/v1/evaluate/workflow-runs/w2/cases/guide-1/cancel", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"id":"guide-1","status":"cancelled"}`)
	})
	mux.HandleFunc("POST /api/v1/evaluate/workflow-runs/w2/cases/baseline-1/cancel", func(w http.ResponseWriter, _ *http.Request) {
		problem(w, 409, `{"title":"Conflict","status":409,"code":"conflict","detail":"case baseline-1 is succeeded; only an active case can be cancelled"}`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/workflow-runs/w3/details", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"workflow":{"id":"w3","name":"failed comparison","status":"failed","error":"case guide-1 failed"},"report":{"comparisons":[]},
			"cases":[{"case":{"id":"guide-1","kind":"guide","status":"failed","error":"deployment failed"}}]}`)
	})
	mux.HandleFunc("POST /api/v1/evaluate/workflow-runs/w3/retry", func(w http.ResponseWriter, _ *http.Request) {
		problem(w, 409, `{"title":"Conflict","status":409,"code":"conflict","detail":"the workflow's cluster has no active session to retry on"}`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/workflow-runs/w3/artifacts/report-html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<html><body><h1>Comparison report w3</h1></body></html>`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/runs/r1", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"id":"r1","status":"running","phase":"matrix-0","progress_percent":40,"progress_message":"matrix-0: 4 of 10 requests completed",
			"live_metrics":{"phase":"matrix-0","planned_requests":10,"completed_requests":4,"successful_requests":3,"failed_requests":1,"in_flight_requests":2,"elapsed_seconds":1.5,
			"summary":{"requests":4,"error_rate":0.25,"ttft_ms":{"p50":31.5,"p90":40.25,"p99":41.75},"tpot_ms":{"p50":5.125,"p99":6.5},"e2e_latency_ms":{"p50":62.5,"p99":80.75},
			"throughput":{"window_seconds":1.5,"requests_per_second":2.667,"output_tokens_per_second":16,"overall_requests_per_second":2.667,"overall_output_tokens_per_second":16},
			"top_errors":[{"cause":"HTTP 503","count":1}],"percentile_relative_accuracy":0.01}}}`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/runs/r1/events", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 1-0\nevent: status\ndata: {\"status\":\"running\",\"live_metrics\":{\"summary\":{\"requests\":5}}}\n\nid: 2-0\nevent: end\ndata: {\"status\":\"succeeded\"}\n\n")
	})
	mux.HandleFunc("GET /api/v1/evaluate/runs/r2", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"id":"r2","status":"succeeded","model":"fake-model","endpoint":"http://127.0.0.1:1/v1","logs":["queued","done"],
			"artifacts":[{"kind":"report-html","uri":"/api/v1/evaluate/runs/r2/artifacts/report-html"}],
			"benchmark":{"shared_prefix":{"num_groups":2,"num_prompts_per_group":15,"system_prompt_len":32,"question_len":8,"output_len":8,"stages":[{"rate":5,"duration":6}]}},
			"metrics":{"request_count":33,"failure_count":0,"success_rate":100,"throughput_tps":51.888,"ttft_ms":11.852,
				"latency_distributions":{"ttft":{"min_ms":10.282,"p50_ms":11.852,"p75_ms":13.658,"p90_ms":25.692,"p95_ms":49.113,"p99_ms":2310.5,"max_ms":2400,"mean_ms":17.416},
				"request_latency":{"min_ms":17,"p50_ms":20,"p75_ms":28,"p90_ms":52,"p95_ms":80,"p99_ms":95,"max_ms":101,"mean_ms":28.9}}},
			"rate_stage_results":[{"rate":5,"duration":6,"metrics":{"request_count":33,"throughput_tps":51.888,"success_rate":100}},
				{"rate":10,"duration":6,"metrics":{"request_count":60,"throughput_tps":90.5,"success_rate":98.5}}],
			"sla":{"met":false,"checks":{"success_rate":{"actual":100,"target":99,"unit":"%","met":true,"margin":1,"margin_percent":1.01},
				"ttft":{"actual":2310.5,"target":2000,"unit":"ms","percentile":"p99","met":false,"margin":-310.5,"margin_percent":-15.525}}}}`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/runs/r2/artifacts/report-html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<html><body><h1>Run report r2</h1></body></html>`)
	})
	mux.HandleFunc("GET /api/v1/evaluate/runs", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"items":[{"id":"old-run","status":"succeeded","created_at":"2026-12-01T10:00:00Z","metrics":{"throughput_tps":10},
			"sla":{"met":true,"checks":{"ttft":{"actual":1,"target":2,"unit":"ms","met":true}}}},
			{"id":"new-run","status":"succeeded","created_at":"2026-12-02T10:00:00Z","metrics":{"throughput_tps":51.888,"ttft_ms":11.852},
			"sla":{"met":false,"checks":{"ttft":{"actual":3,"target":2,"unit":"ms","met":false}}}}]}`)
	})
	mux.HandleFunc("GET /api/cluster/clusters", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"items":[{"id":"c1","name":"local","kind":"local","sessionId":"s-1"}],"total":1}`)
	})
	mux.HandleFunc("GET /api/v1/configurations", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("type") != "guide" {
			problem(w, 422, `{"title":"Validation failed","status":422,"detail":"the console asks for guide configurations"}`)
			return
		}
		_, _ = io.WriteString(w, `{"items":[{"id":"cfg-old","name":"old guide","type":"guide","created_at":"2026-12-01T10:00:00Z"},`+
			`{"id":"cfg-new","name":"new guide","type":"guide","created_at":"2026-12-02T10:00:00Z"}],"total":2}`)
	})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.bodies[r.Method+" "+r.URL.Path] = string(raw)
		f.calls[r.Method+" "+r.URL.Path]++
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) called(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

// startConsole serves the console against api with extra environment.
func startConsole(t *testing.T, api string, extra map[string]string) (*fn.Server, *httptest.Server) {
	t.Helper()
	env := map[string]string{"LENS_API_URL": api, "LENS_AUTH": "required", "LENS_SECRET_KEY": secret.NewKey(),
		"LENS_COOKIE_SECURE": "false", "LENS_ALLOWED_HOSTS": "127.0.0.1"}
	for k, v := range extra {
		env[k] = v
	}
	s, err := fn.NewServer(context.Background(), fntest.Config(t, fntest.Env(t, env)), console.Name, console.Build)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	return s, srv
}

// browser is a client with cookies that follows no redirect.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func fetch(t *testing.T, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(raw)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", page)
	}
	return m[1]
}

// signIn walks the sign-in page with token and returns the CSRF token of the new session.
func signIn(t *testing.T, c *http.Client, base, token string) string {
	t.Helper()
	_, page := fetch(t, c, "GET", base+"/login", nil)
	resp, _ := fetch(t, c, "POST", base+"/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {token}, "next": {"/tasks"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tasks" {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page = fetch(t, c, "GET", base+"/tasks", nil)
	return csrfOf(t, page)
}

// TestSignInKeepsTheTokenInASealedCookie: with auth on a page sends the browser to sign in;
// a wrong token is refused; the right one is kept in an HttpOnly, SameSite=Strict cookie that
// does not hold it in the clear, every API call carries it, no page shows it, and signing out
// or revoking it ends the session.
func TestSignInKeepsTheTokenInASealedCookie(t *testing.T) {
	api := newFakeAPI(t)
	s, srv := startConsole(t, api.URL, nil)
	token, tok, err := s.Deps.Tokens.Create(context.Background(), "console-user", []auth.Scope{auth.SimulationRead, auth.SimulationRun})
	if err != nil {
		t.Fatal(err)
	}
	c := browser(t)
	resp, _ := fetch(t, c, "GET", srv.URL+"/tasks", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2Ftasks" {
		t.Fatalf("unsigned page: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := fetch(t, c, "GET", srv.URL+"/login", nil)
	resp, body := fetch(t, c, "POST", srv.URL+"/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {"lens_000000000000_" + strings.Repeat("0", 64)}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "not valid") || strings.Contains(body, strings.Repeat("0", 64)) {
		t.Fatalf("bad token: %d %s", resp.StatusCode, body)
	}
	_, page = fetch(t, c, "GET", srv.URL+"/login", nil)
	resp, _ = fetch(t, c, "POST", srv.URL+"/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {token}, "next": {"//attacker.example/x"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in with a foreign next: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookie := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"lensfn_console=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, token) || strings.Contains(cookie, "Secure") {
		t.Errorf("Set-Cookie %q holds the token or is Secure with LENS_COOKIE_SECURE=false", cookie)
	}
	resp, body = fetch(t, c, "GET", srv.URL+"/tasks", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `href="/tasks/t1"`) || strings.Contains(body, token) {
		t.Fatalf("tasks page: %d (token shown: %t)\n%s", resp.StatusCode, strings.Contains(body, token), body)
	}
	if !strings.Contains(body, "simulation:read,simulation:run") {
		t.Errorf("the page does not say which scopes the session has")
	}
	api.mu.Lock()
	last := api.auth[len(api.auth)-1]
	api.mu.Unlock()
	if last != "Bearer "+token {
		t.Fatalf("the API got Authorization %q", last)
	}
	if err := s.Deps.Tokens.Revoke(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	resp, _ = fetch(t, c, "GET", srv.URL+"/tasks", nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("a revoked token still opens pages: %d", resp.StatusCode)
	}
}

// TestCookieIsSecureByDefault: unless the operator says the console is served over plain
// HTTP, the session cookie is Secure.
func TestCookieIsSecureByDefault(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_COOKIE_SECURE": ""})
	resp, _ := fetch(t, browser(t), "GET", srv.URL+"/login", nil)
	if c := resp.Header.Get("Set-Cookie"); !strings.Contains(c, "Secure") || !strings.Contains(c, "HttpOnly") {
		t.Fatalf("Set-Cookie %q", c)
	}
}

// TestFormsNeedTheSessionsCSRFToken: a POST without the session's CSRF token, or with another
// session's, is refused before any API call; with it the action goes through.
func TestFormsNeedTheSessionsCSRFToken(t *testing.T) {
	api := newFakeAPI(t)
	s, srv := startConsole(t, api.URL, nil)
	token := fntest.Token(t, s)
	c := browser(t)
	csrf := signIn(t, c, srv.URL, token)
	other := signIn(t, browser(t), srv.URL, token)
	for _, tc := range []struct {
		name string
		form url.Values
	}{{"no token", url.Values{}}, {"another session's", url.Values{"csrf": {other}}}} {
		resp, body := fetch(t, c, "POST", srv.URL+"/tasks/t1/stop", tc.form)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}
	if n := api.called("POST /api/simulation/tasks/t1/stop"); n != 0 {
		t.Fatalf("the API was called %d times for refused forms", n)
	}
	resp, _ := fetch(t, c, "POST", srv.URL+"/tasks/t1/stop", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || api.called("POST /api/simulation/tasks/t1/stop") != 1 {
		t.Fatalf("stop with the CSRF token: %d", resp.StatusCode)
	}
	// A cross-site form is refused by the runtime's Origin check before the console runs.
	req, _ := http.NewRequest("POST", srv.URL+"/tasks/t1/stop", strings.NewReader("csrf="+csrf))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://attacker.example")
	r2, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site form: %d", r2.StatusCode)
	}
}

// TestCreateFormShowsTheAPIsValidation: the create form sends numbers as numbers and shows the
// API's problem+json field errors next to the fields, keeping what the user typed.
func TestCreateFormShowsTheAPIsValidation(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	c := browser(t)
	_, page := fetch(t, c, "GET", srv.URL+"/tasks/new", nil)
	resp, body := fetch(t, c, "POST", srv.URL+"/tasks", url.Values{"csrf": {csrfOf(t, page)}, "scenario": {"chat"},
		"endpoint_url": {"ftp://nowhere"}, "model_name": {"m"}, "trace_dataset": {"lensfn-sample-chat"}, "scale_factor": {"10"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "422 Validation failed") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, `data-field="endpoint_url">endpoint_url must be an http(s) URL`) || !strings.Contains(body, `value="ftp://nowhere"`) {
		t.Fatalf("the form does not show the field error or lost the input:\n%s", body)
	}
	var sent map[string]any
	api.mu.Lock()
	_ = json.Unmarshal([]byte(api.bodies["POST /api/simulation/tasks"]), &sent)
	api.mu.Unlock()
	if sent["scale_factor"] != 10.0 || sent["endpoint_url"] != "ftp://nowhere" || sent["duration_seconds"] != nil {
		t.Fatalf("sent %v", sent)
	}
}

// TestEvaluationsSayWhenTheRoutesAreMissing: a 404 from the workflow routes is an honest
// "not available" state, not an error page.
func TestEvaluationsSayWhenTheRoutesAreMissing(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	resp, body := fetch(t, browser(t), "GET", srv.URL+"/evaluations", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="unavailable"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// TestTaskEventsAreRelayed: the console relays the task's event stream (an EventSource cannot
// send the token), event by event, comments dropped.
func TestTaskEventsAreRelayed(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	resp, body := fetch(t, browser(t), "GET", srv.URL+"/tasks/t1/events", nil)
	want := "id: 1-0\nevent: status\ndata: {\"status\":\"running\",\"progress_percent\":50}\n\nid: 2-0\nevent: end\ndata: {\"status\":\"completed\"}\n\n"
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || body != want {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// TestConsoleRefusesBadSettings: a bad LENS_API_URL or LENS_COOKIE_SECURE stops the console at
// start with an error naming the variable.
func TestConsoleRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"LENS_API_URL", "ftp://ingress", `LENS_API_URL "ftp://ingress" is not an http(s) base URL`},
		{"LENS_API_URL", "http://user:pw@ingress", "without credentials or query"},
		{"LENS_COOKIE_SECURE", "maybe", `LENS_COOKIE_SECURE "maybe" is not true or false`},
	} {
		env := map[string]string{"LENS_API_URL": "http://127.0.0.1:8080", tc.key: tc.value}
		_, err := fn.NewServer(context.Background(), fntest.Config(t, fntest.Env(t, env)), console.Name, console.Build)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: err = %v, want %q", tc.key, tc.value, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("the start-up error carries the URL's password: %v", err)
		}
	}
}

// TestConsoleNeedsItsAPIURL: without LENS_API_URL the console refuses to start, saying why.
func TestConsoleNeedsItsAPIURL(t *testing.T) {
	_, err := fn.NewServer(context.Background(), fntest.Config(t, fntest.Env(t, nil)), console.Name, console.Build)
	if err == nil || !strings.Contains(err.Error(), "LENS_API_URL") {
		t.Fatalf("err = %v", err)
	}
}

// TestEvaluationShowsCasesAndTheComparison: the details page lists the cases and draws the
// comparison report's geometric-mean ratios with the SLA verdict, the parity with its reasons,
// and each change with its 95 % interval and verdict; a change inside its noise (ITL +100 %,
// interval -80 to 400 %) is pale and cut at the range the significant TTFT change sets, so it
// does not dominate the chart.
func TestEvaluationShowsCasesAndTheComparison(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	resp, body := fetch(t, browser(t), "GET", srv.URL+"/evaluations/w1", nil)
	for _, want := range []string{"Qwen comparison", `href="/runs/run-1"`, "guide-1 vs baseline-1 (direct-vllm)", "SLA met",
		"matrix: throughput_tps", "<svg", "1.25", "<strong>Parity not valid</strong> · accelerators 2 vs 1", "<li>accelerator count differs: guide 2, baseline 1</li>",
		`<th>TTFT p50 (ms)</th><td>40.500</td><td>81</td><td>0.500×</td><td>0.445× to 0.557×</td>`, "4 req/s × 2 s", "<td>15.867</td><td>22.844</td><td class=\"ratio\">0.695×</td>",
		"Change versus the baseline, with 95 % intervals", "-55.500 to -44.250 %", "no significant difference", `class="interval"`,
		`fill-opacity="0.35"`, `class="cut"`,
		// The configurations against each other (two replicas against one), with both sides' numbers.
		"Configurations compared", "guide-1 vs guide-2", "optimized-baseline · inference-sim · 2 replicas", "baseline-vllm · inference-sim · 1 replica",
		`<th>Output throughput (tok/s)</th><td>1226.0</td><td>621.3</td><td class="ratio">1.973×</td>`, "Ratio, left / right (1 = equal)"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if resp.StatusCode != 200 || t.Failed() {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
}

// TestMetricsCountTheAPICalls: /metrics carries the console's calls to the APIs by family and
// code, and the sign-ins by outcome.
func TestMetricsCountTheAPICalls(t *testing.T) {
	api := newFakeAPI(t)
	s, srv := startConsole(t, api.URL, nil)
	c := browser(t)
	signIn(t, c, srv.URL, fntest.Token(t, s))
	fetch(t, c, "GET", srv.URL+"/evaluations", nil)
	_, body := fetch(t, c, "GET", srv.URL+"/metrics", nil)
	for _, want := range []string{`lens_console_api_calls_total{api="/api/simulation",code="200"} 1`,
		`lens_console_api_calls_total{api="/api/v1/evaluate",code="404"} 1`, `lens_console_logins_total{outcome="ok"} 1`,
		`lens_console_api_call_duration_seconds_count{api="/api/simulation"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestEvaluationCaseActions: a running evaluation offers a cancel for each active case and for
// itself, each a CSRF-protected form; a cancel goes to the evaluation API's case route, and
// what the API refuses (a 409 for a case that already finished) is shown on the page.
func TestEvaluationCaseActions(t *testing.T) {
	api := newFakeAPI(t)
	s, srv := startConsole(t, api.URL, nil)
	c := browser(t)
	csrf := signIn(t, c, srv.URL, fntest.Token(t, s))
	resp, page := fetch(t, c, "GET", srv.URL+"/evaluations/w2", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, `action="/evaluations/w2/cases/guide-1/cancel"`) || !strings.Contains(page, `id="cancel-workflow"`) {
		t.Fatalf("%d: no cancel forms\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, `cases/baseline-1/cancel`) || strings.Contains(page, `id="retry-workflow"`) || strings.Contains(page, `id="delete-workflow"`) {
		t.Fatalf("a finished case is offered a cancel, or a running evaluation a retry or delete:\n%s", page)
	}
	resp, _ = fetch(t, c, "POST", srv.URL+"/evaluations/w2/cases/guide-1/cancel", url.Values{})
	if resp.StatusCode != http.StatusForbidden || api.called("POST /api/v1/evaluate/workflow-runs/w2/cases/guide-1/cancel") != 0 {
		t.Fatalf("a cancel without the CSRF token: %d", resp.StatusCode)
	}
	resp, _ = fetch(t, c, "POST", srv.URL+"/evaluations/w2/cases/guide-1/cancel", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/evaluations/w2" ||
		api.called("POST /api/v1/evaluate/workflow-runs/w2/cases/guide-1/cancel") != 1 {
		t.Fatalf("cancel case: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := fetch(t, c, "POST", srv.URL+"/evaluations/w2/cases/baseline-1/cancel", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "409 Conflict") ||
		!strings.Contains(body, "case baseline-1 is succeeded; only an active case can be cancelled") || !strings.Contains(body, "running comparison") {
		t.Fatalf("a refused cancel: %d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("the page with the refusal refreshes itself away")
	}
}

// TestEvaluationRetryAndReport: a failed evaluation offers a retry (the API's 409 is shown),
// a delete, and its comparison report, relayed sandboxed.
func TestEvaluationRetryAndReport(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	c := browser(t)
	_, page := fetch(t, c, "GET", srv.URL+"/evaluations/w3", nil)
	for _, want := range []string{`id="retry-workflow"`, `id="delete-workflow"`, `href="/evaluations/w3/report"`, "deployment failed"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, `id="cancel-workflow"`) || strings.Contains(page, "Cancel case") {
		t.Errorf("a failed evaluation offers a cancel")
	}
	resp, body := fetch(t, c, "POST", srv.URL+"/evaluations/w3/retry", url.Values{"csrf": {csrfOf(t, page)}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "no active session to retry on") || api.called("POST /api/v1/evaluate/workflow-runs/w3/retry") != 1 {
		t.Fatalf("retry refused: %d\n%s", resp.StatusCode, body)
	}
	resp, body = fetch(t, c, "GET", srv.URL+"/evaluations/w3/report", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "Comparison report w3") || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("report: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), body)
	}
}

// TestRunPageShowsTheLiveSummary: a running run's page shows its live_metrics summary (and
// follows the run's relayed event stream instead of refreshing).
func TestRunPageShowsTheLiveSummary(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	c := browser(t)
	resp, page := fetch(t, c, "GET", srv.URL+"/runs/r1", nil)
	for _, want := range []string{`data-live="summary.ttft_ms.p90">40.250<`, `data-live="summary.tpot_ms.p99">6.500<`, `data-live="summary.e2e_latency_ms.p50">62.500<`,
		`data-live="summary.throughput.output_tokens_per_second">16<`, "1 × HTTP 503", `data-run="r1"`, `data-format="percent">25.0%<`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %s", want)
		}
	}
	if resp.StatusCode != 200 || strings.Contains(page, "\n<meta http-equiv=\"refresh\"") || !strings.Contains(page, "<noscript><meta http-equiv=\"refresh\"") {
		t.Errorf("%d: the live run page refreshes itself with JavaScript on", resp.StatusCode)
	}
	resp, body := fetch(t, c, "GET", srv.URL+"/runs/r1/events", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `"live_metrics":{"summary":{"requests":5}}`) || !strings.Contains(body, "event: end") {
		t.Fatalf("run events: %d %q", resp.StatusCode, body)
	}
}

// TestSignInNeverRedirectsOffTheConsole: a sign-in link whose next a browser would turn into
// another host (a tab, a newline, a backslash) lands on the console's home page instead.
func TestSignInNeverRedirectsOffTheConsole(t *testing.T) {
	api := newFakeAPI(t)
	s, srv := startConsole(t, api.URL, nil)
	token := fntest.Token(t, s)
	for next, want := range map[string]string{"/\t/evil.example": "/", "/\\evil.example": "/", "/\n/evil.example": "/", "/tasks": "/tasks"} {
		c := browser(t)
		// The link as an attacker sends it: /login?next=/%09/evil.example.
		_, page := fetch(t, c, "GET", srv.URL+"/login?next="+url.QueryEscape(next), nil)
		if strings.Contains(page, "evil.example") {
			t.Fatalf("the sign-in form for next %q carries it on", next)
		}
		resp, _ := fetch(t, c, "POST", srv.URL+"/login", url.Values{"csrf": {csrfOf(t, page)}, "token": {token}, "next": {next}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Fatalf("next %q: %d Location %q, want %q", next, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}

// TestNewEvaluationTemplateIsARequestTheAPIAccepts: the new-evaluation form starts from a
// request the evaluation API's own parser and validation accept (no configuration_artifact_ids,
// which it refuses), filled in with the cluster's active session and the newest guide
// configuration.
func TestNewEvaluationTemplateIsARequestTheAPIAccepts(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	resp, page := fetch(t, browser(t), "GET", srv.URL+"/evaluations/new", nil)
	m := regexp.MustCompile(`(?s)<textarea id="spec" name="spec"[^>]*>(.*?)</textarea>`).FindStringSubmatch(page)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("%d: no spec field\n%s", resp.StatusCode, page)
	}
	spec := html.UnescapeString(m[1])
	req, _, err := workflow.ParseEvaluation([]byte(spec))
	if err == nil {
		err = workflow.ValidateEvaluation(req)
	}
	if err != nil {
		t.Fatalf("the API refuses the form's template: %v\n%s", err, spec)
	}
	if req.ClusterSessionID != "s-1" || len(req.BenchmarkPlans) != 1 || req.BenchmarkPlans[0].ConfigurationArtifactID != "cfg-new" ||
		req.BenchmarkPlans[0].SLATargets == nil || req.BenchmarkPlans[0].Benchmark == nil {
		t.Errorf("the template is not filled in from the inventory: %s", spec)
	}
	for _, want := range []string{`id="clusters-hint"`, "<code>s-1</code> (local, local)", "<code>cfg-new</code> (new guide)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the form lacks %s", want)
		}
	}
}

// TestRunPageIsTheRunsReport: a finished run's page leads with its SLA verdict and each target's
// margin (a missed TTFT p99 named with how far past it is), then headline tiles, the percentile
// table, charts and the stages; the HTML report is linked and relayed sandboxed; the raw record
// is behind a disclosure, not ~150 rows of keys.
func TestRunPageIsTheRunsReport(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	c := browser(t)
	resp, page := fetch(t, c, "GET", srv.URL+"/runs/r2", nil)
	for _, want := range []string{`class="verdict v-missed"`, "SLA missed", "Missed: TTFT p99 (2310.5 ms against ≤ 2000 ms)",
		`<tr data-check="ttft" class="c-missed"><th>TTFT p99</th><td>≤ 2000 ms</td><td>2310.5 ms</td><td>310.5 ms past</td><td>-15.5 %</td>`,
		`<th>Success rate</th><td>≥ 99 %</td><td>100 %</td><td>1 % inside</td><td>&#43;1.0 %</td>`,
		`href="/runs/r2/report"`, `data-metric="throughput_tps"`, "<b>51.888</b>", `data-distribution="ttft"`, "<td>49.113</td>",
		"Request times by percentile", "5 req/s × 6 s", "10 req/s × 6 s", "Output throughput by stage",
		`<details id="raw">`, "shared prefix: 2 groups × 15 prompts"} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %s", want)
		}
	}
	if strings.Index(page, `id="verdict"`) > strings.Index(page, `id="metrics"`) || strings.Index(page, `id="metrics"`) > strings.Index(page, `id="percentiles"`) {
		t.Errorf("the verdict does not come first, then the tiles, then the percentiles")
	}
	if resp.StatusCode != 200 || t.Failed() {
		t.Fatalf("%d\n%s", resp.StatusCode, page)
	}
	resp, body := fetch(t, c, "GET", srv.URL+"/runs/r2/report", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "Run report r2") || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("report: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), body)
	}
}

// TestHomeListsRecentRunsWithTheirVerdicts: the overview lists the newest runs first with their
// SLA verdict and headline numbers, not only a count and a link.
func TestHomeListsRecentRunsWithTheirVerdicts(t *testing.T) {
	api := newFakeAPI(t)
	_, srv := startConsole(t, api.URL, map[string]string{"LENS_AUTH": "off"})
	resp, page := fetch(t, browser(t), "GET", srv.URL+"/", nil)
	newRow := regexp.MustCompile(`(?s)<tr data-run="new-run">.*?</tr>`).FindString(page)
	if resp.StatusCode != 200 || !strings.Contains(newRow, `s-failed">missed`) || !strings.Contains(newRow, "51.888 tok/s") || !strings.Contains(newRow, "11.852 ms") ||
		strings.Index(page, `data-run="new-run"`) > strings.Index(page, `data-run="old-run"`) || !strings.Contains(page, `id="recent-evaluations"`) {
		t.Fatalf("%d: the overview's recent runs:\n%s", resp.StatusCode, page)
	}
}
