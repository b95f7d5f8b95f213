package fn_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/fn"
)

// TestRouteTableAnswers: the runtime answers what the route table implies, always as
// problem+json: 404 off the table (inside and outside the function's paths), 405 with Allow on a
// known path, 401 with a challenge, 403 for a missing scope, 415 for a body that is not JSON, 413
// over the route's limit, 422 for nesting too deep.
func TestRouteTableAnswers(t *testing.T) {
	ts := newTestServer(t, new(atomic.Int32), nil)
	ctx := context.Background()
	reader, _, err := ts.fn.Deps.Tokens.Create(ctx, "reader", []auth.Scope{auth.SimulationRead})
	if err != nil {
		t.Fatal(err)
	}
	full := "Bearer " + ts.token
	deep := strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40)
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		contains                 string
		wantHeader               map[string]string
	}{
		{"unknown path", "GET", "/api/nothing", "", nil, 404, `"not_found"`, nil},
		{"root", "GET", "/", "", nil, 404, `"not_found"`, nil},
		{"wrong method", "PUT", "/api/echo/7", "", jsonAuth(full), 405, `"method_not_allowed"`,
			map[string]string{"Allow": "DELETE, GET, HEAD, POST"}},
		{"wrong method on a runtime route", "POST", "/healthz", "", nil, 405, `"method_not_allowed"`, map[string]string{"Allow": "GET, HEAD"}},
		{"no token", "GET", "/api/echo/7", "", nil, 401, `"unauthorized"`, map[string]string{"WWW-Authenticate": `Bearer realm="lensfn"`}},
		{"not bearer", "GET", "/api/echo/7", "", map[string]string{"Authorization": "Basic dTpw"}, 401, `"unauthorized"`, nil},
		{"invalid token", "GET", "/api/echo/7", "", map[string]string{"Authorization": "Bearer lens_000000000000_" + strings.Repeat("0", 64)}, 401, `not valid`,
			map[string]string{"WWW-Authenticate": `Bearer realm="lensfn", error="invalid_token"`}},
		{"scope allows", "GET", "/api/echo/7", "", map[string]string{"Authorization": "Bearer " + reader}, 200, `"id":"7"`, nil},
		{"scope missing", "POST", "/api/echo/7", `{"name":"x"}`, jsonAuth("Bearer " + reader), 403, `simulation:run`,
			map[string]string{"WWW-Authenticate": `Bearer realm="lensfn", error="insufficient_scope", scope="simulation:run"`}},
		{"form body", "POST", "/api/echo/7", `name=x`, map[string]string{"Authorization": full, "Content-Type": "application/x-www-form-urlencoded"}, 415, `"unsupported_media"`, nil},
		{"text/plain body", "POST", "/api/echo/7", `{"name":"x"}`, map[string]string{"Authorization": full, "Content-Type": "text/plain"}, 415, `application/json`, nil},
		{"body without a type", "POST", "/api/echo/7", `{"name":"x"}`, map[string]string{"Authorization": full}, 415, `application/json`, nil},
		{"json with charset", "POST", "/api/echo/7", `{"name":"x"}`, map[string]string{"Authorization": full, "Content-Type": "application/json; charset=utf-8"}, 200, `"x"`, nil},
		{"over the route's limit", "POST", "/api/small", `{"name":"` + strings.Repeat("x", 100) + `"}`, jsonAuth(full), 413, `64 bytes`, nil},
		{"too deep", "POST", "/api/echo/7", deep, jsonAuth(full), 422, `json_too_deep`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, ts.URL+tc.path, tc.body, tc.header)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.contains) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if resp.Header.Get("Content-Type") != "application/problem+json" && tc.status >= 400 {
				t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
			}
			for k, v := range tc.wantHeader {
				if got := resp.Header.Get(k); got != v {
					t.Fatalf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestChunkedBodyOverTheLimitIs413: a body without a Content-Length is cut at the limit too.
func TestChunkedBodyOverTheLimitIs413(t *testing.T) {
	ts := newTestServer(t, new(atomic.Int32), nil)
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"name":"` + strings.Repeat("x", 200) + `"}`))
		_ = pw.Close()
	}()
	req, _ := http.NewRequest("POST", ts.URL+"/api/small", pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ts.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestEventsBodyIsCappedBeforeDecoding: POST /events refuses an oversized body with 413 by its
// length, before the CloudEvents receiver reads it.
func TestEventsBodyIsCappedBeforeDecoding(t *testing.T) {
	var handled atomic.Int32
	ts := newTestServer(t, &handled, nil)
	header := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "big", "Ce-Source": "/test", "Content-Type": "application/json",
		"Ce-Type": "dev.lensfn.simulation.dataset.downloaded.v1"}
	resp, body := do(t, "POST", ts.URL+"/events", `{"pad":"`+strings.Repeat("x", 2<<20)+`"}`, header)
	if resp.StatusCode != 413 || handled.Load() != 0 {
		t.Fatalf("%d %s (handled %d)", resp.StatusCode, body, handled.Load())
	}
}

// TestTokensAreRevocableAndStoredAsHashes: a revoked token is refused at once; the store never
// holds the secret.
func TestTokensAreRevocableAndStoredAsHashes(t *testing.T) {
	ts := newTestServer(t, new(atomic.Int32), nil)
	ctx := context.Background()
	secret, tok, err := ts.fn.Deps.Tokens.Create(ctx, "ci", []auth.Scope{auth.SimulationRead})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ts.fn.Deps.Store.Get(ctx, auth.Kind, tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, tail, _ := strings.Cut(strings.TrimPrefix(secret, "lens_"), "_")
	if strings.Contains(string(rec.Doc), tail) || !strings.Contains(string(rec.Doc), auth.HashToken(secret)) {
		t.Fatalf("stored %s", rec.Doc)
	}
	h := map[string]string{"Authorization": "Bearer " + secret}
	if resp, body := do(t, "GET", ts.URL+"/api/echo/1", "", h); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	list, err := ts.fn.Deps.Tokens.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	if err := ts.fn.Deps.Tokens.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "GET", ts.URL+"/api/echo/1", "", h); resp.StatusCode != 401 {
		t.Fatalf("revoked token: %d %s", resp.StatusCode, body)
	}
	// A token with the right id but another secret is refused.
	forged := secret[:len(secret)-4] + "0000"
	if forged == secret {
		forged = secret[:len(secret)-4] + "1111"
	}
	if resp, _ := do(t, "GET", ts.URL+"/api/echo/1", "", map[string]string{"Authorization": "Bearer " + forged}); resp.StatusCode != 401 {
		t.Fatalf("forged token: %d", resp.StatusCode)
	}
}

// TestBootstrapTokenAndAuthOff: the Secret's hash admits its token with every scope; with
// LENS_AUTH=off no token is needed, but Host and Origin are still checked.
func TestBootstrapTokenAndAuthOff(t *testing.T) {
	const boot = "a-bootstrap-token-from-a-secret"
	ts := newTestServer(t, new(atomic.Int32), map[string]string{"LENS_BOOTSTRAP_TOKEN_SHA256": auth.HashToken(boot)})
	if resp, body := do(t, "POST", ts.URL+"/api/echo/1", `{"name":"b"}`, jsonAuth("Bearer "+boot)); resp.StatusCode != 200 {
		t.Fatalf("bootstrap: %d %s", resp.StatusCode, body)
	}
	off := newTestServer(t, new(atomic.Int32), map[string]string{"LENS_AUTH": "off", "LENS_ALLOWED_HOSTS": "127.0.0.1,localhost"})
	if resp, body := do(t, "POST", off.URL+"/api/echo/1", `{"name":"b"}`, map[string]string{"Content-Type": "application/json"}); resp.StatusCode != 200 {
		t.Fatalf("auth off: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, "POST", off.URL+"/api/echo/1", `{"name":"b"}`, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}); resp.StatusCode != 403 {
		t.Fatalf("cross-origin with auth off: %d", resp.StatusCode)
	}
}

// TestHostAndOriginChecks: DNS rebinding (a Host outside LENS_ALLOWED_HOSTS) and cross-site
// requests (an Origin that is not the Host) are refused on scoped routes; probes still answer.
func TestHostAndOriginChecks(t *testing.T) {
	ts := newTestServer(t, new(atomic.Int32), map[string]string{"LENS_ALLOWED_HOSTS": "127.0.0.1,localhost,::1",
		"LENS_ALLOWED_ORIGINS": "https://ui.example"})
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	bearer := "Bearer " + ts.token
	cases := []struct {
		name, host, origin, path string
		status                   int
	}{
		{"loopback host", "127.0.0.1" + port, "", "/api/echo/1", 200},
		{"localhost", "localhost" + port, "", "/api/echo/1", 200},
		{"rebound name", "attacker.example" + port, "", "/api/echo/1", 403},
		{"same origin", "127.0.0.1" + port, "http://127.0.0.1" + port, "/api/echo/1", 200},
		{"cross site", "127.0.0.1" + port, "http://attacker.example", "/api/echo/1", 403},
		{"null origin", "127.0.0.1" + port, "null", "/api/echo/1", 403},
		{"rebound same origin", "attacker.example" + port, "http://attacker.example" + port, "/api/echo/1", 403},
		{"allowed origin", "127.0.0.1" + port, "https://ui.example", "/api/echo/1", 200},
		{"probe under any host", "10.1.2.3" + port, "", "/healthz", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.URL+tc.path, nil)
			req.Host = tc.host
			req.Header.Set("Authorization", bearer)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		})
	}
}

// TestPageRoutes: a Page route (the console's) needs no bearer token, yet its GET is checked for
// Host and Origin like a scoped route, and it takes an HTML form body where an API route
// answers 415; text/plain stays refused and the body limit holds.
func TestPageRoutes(t *testing.T) {
	e := storeEnv(t, map[string]string{"HOME": t.TempDir(), "LENS_ALLOWED_HOSTS": "127.0.0.1"})
	cfg, err := fn.LoadConfig(env(e))
	if err != nil {
		t.Fatal(err)
	}
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		_, _ = io.WriteString(w, "page "+r.PostFormValue("name"))
	})
	_, srv := serve(t, cfg, "page", func(context.Context, fn.Deps) (*fn.Function, error) {
		return &fn.Function{Routes: []fn.Route{
			{Method: "GET", Path: "/{$}", Scope: auth.Public, Page: true, Handler: page},
			{Method: "POST", Path: "/form", Scope: auth.Public, Page: true, Handler: page, MaxBodyBytes: 64},
		}}, nil
	})
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	cases := []struct {
		name, method, path, host, body string
		header                         map[string]string
		status                         int
	}{
		{"page on the allowed host", "GET", "/", "127.0.0.1" + port, "", nil, 200},
		{"page under a rebound host", "GET", "/", "attacker.example" + port, "", nil, 403},
		{"page from another origin", "GET", "/", "127.0.0.1" + port, "", map[string]string{"Origin": "http://attacker.example"}, 403},
		{"page with an undeclared query", "GET", "/?x=1", "127.0.0.1" + port, "", nil, 422},
		{"form body", "POST", "/form", "127.0.0.1" + port, "name=x", form, 200},
		{"cross-site form", "POST", "/form", "127.0.0.1" + port, "name=x", map[string]string{"Content-Type": form["Content-Type"], "Origin": "http://attacker.example"}, 403},
		{"text/plain body", "POST", "/form", "127.0.0.1" + port, "name=x", map[string]string{"Content-Type": "text/plain"}, 415},
		{"form over the limit", "POST", "/form", "127.0.0.1" + port, "name=" + strings.Repeat("x", 100), form, 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			req.Host = tc.host
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if tc.status == 200 && !strings.HasPrefix(string(b), "page") {
				t.Fatalf("body %q", b)
			}
		})
	}
}
