package fn_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/cloudevent"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

func env(m map[string]string) map[string]string { return m }

func TestLoadConfig(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c fn.Config)
	}{
		{name: "defaults", env: map[string]string{"HOME": "/home/u"}, check: func(t *testing.T, c fn.Config) {
			if c.Port != 8080 || c.DataDir != "/home/u/.local/share/lensfn" || c.LogLevel != "info" || c.DrainQuietPeriod != 2*time.Second {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "knative contract", env: map[string]string{"PORT": "9090", "K_SERVICE": "simulation-api", "K_REVISION": "simulation-api-00001",
			"K_SINK": "http://broker", "K_CE_OVERRIDES": `{"extensions":{"cluster":"lab1"}}`, "REDIS_URL": "redis://r:6379/0",
			"LENS_DATA_DIR": "/data", "POD_NAME": "pod-1", "LOG_LEVEL": "debug"}, check: func(t *testing.T, c fn.Config) {
			if c.Port != 9090 || c.Service != "simulation-api" || c.Sink != "http://broker" || c.CEOverrides["cluster"] != "lab1" ||
				c.RedisURL != "redis://r:6379/0" || c.DataDir != "/data" || c.InstanceID != "pod-1" || c.CacheDir != "/data/cache" {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "security", env: map[string]string{"REDIS_URL": "redis://r:6379/0", "REDIS_PASSWORD": "pw", "LENS_LISTEN_HOST": "127.0.0.1",
			"LENS_ALLOWED_HOSTS": "a, b", "LENS_ENDPOINT_DENY": "10.0.0.0/8"}, check: func(t *testing.T, c fn.Config) {
			if c.RedisURL != "redis://:pw@r:6379/0" || c.ListenHost != "127.0.0.1" || c.Auth != fn.AuthRequired ||
				len(c.AllowedHosts) != 2 || c.AllowedHosts[1] != "b" || len(c.Endpoints.Deny) != 1 {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "redis CA file", env: map[string]string{"REDIS_URL": "rediss://r:6379/0", "REDIS_CA_FILE": "/etc/lensfn/redis-ca.pem"}, check: func(t *testing.T, c fn.Config) {
			if c.RedisCAFile != "/etc/lensfn/redis-ca.pem" {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "redis CA file, embedded store", env: map[string]string{"REDIS_CA_FILE": "/etc/lensfn/redis-ca.pem"}, wantErr: "REDIS_CA_FILE is set but REDIS_URL is not"},
		{name: "bad auth", env: map[string]string{"LENS_AUTH": "maybe"}, wantErr: "LENS_AUTH"},
		{name: "bad bootstrap hash", env: map[string]string{"LENS_BOOTSTRAP_TOKEN_SHA256": "abc"}, wantErr: "LENS_BOOTSTRAP_TOKEN_SHA256"},
		{name: "bad endpoint policy", env: map[string]string{"LENS_ENDPOINT_ALLOW": "10.0.0.0/99"}, wantErr: "LENS_ENDPOINT_ALLOW"},
		{name: "bad port", env: map[string]string{"PORT": "http"}, wantErr: "PORT"},
		{name: "port range", env: map[string]string{"PORT": "70000"}, wantErr: "out of range"},
		{name: "bad overrides", env: map[string]string{"K_CE_OVERRIDES": "cluster=lab1"}, wantErr: "K_CE_OVERRIDES"},
		{name: "bad level", env: map[string]string{"LOG_LEVEL": "loud"}, wantErr: "LOG_LEVEL"},
		{name: "bad duration", env: map[string]string{"LENS_DRAIN_QUIET_PERIOD": "soon"}, wantErr: "LENS_DRAIN_QUIET_PERIOD"},
		{name: "bad backend id", env: map[string]string{"LENS_BACKEND_ID": "a/b"}, wantErr: "LENS_BACKEND_ID"},
		{name: "backend id", env: map[string]string{"LENS_BACKEND_ID": "lab-1", "POD_NAME": "runner-0"}, check: func(t *testing.T, c fn.Config) {
			if c.BackendID != "lab-1" || c.InstanceID != "lab-1/runner-0" || fn.BackendOf(c.InstanceID) != "lab-1" || fn.BackendOf("runner-0") != "" {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "function settings", env: map[string]string{"LENS_SECRET_KEY": "c2VjcmV0", "LENS_DATASET_MIRROR": "http://mirror",
			"LENS_MAX_CONCURRENT_TASKS": "3", "LENS_LEASE_TTL": "4s", "LENS_SWEEP_INTERVAL": "500ms"}, check: func(t *testing.T, c fn.Config) {
			if c.SecretKey.Reveal() != "c2VjcmV0" {
				t.Fatalf("%+v", c)
			}
			if printed := fmt.Sprintf("%v %+v %#v", c, c, c); strings.Contains(printed, "c2VjcmV0") {
				t.Fatalf("the secret key is printed with the config: %s", printed)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fn.LoadConfig(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

type echo struct {
	Name string `json:"name"`
}

func testBuilder(handled *atomic.Int32) fn.Builder {
	return func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		echoHandler := fn.Handle(func(w http.ResponseWriter, r *http.Request) error {
			var in echo
			if err := fn.DecodeJSON(r, &in, false); err != nil {
				return err
			}
			if in.Name == "" {
				return problem.New(problem.CodeBadRequest, "name must not be empty")
			}
			fn.WriteJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id"), "name": in.Name})
			return nil
		})
		read := fn.Handle(func(w http.ResponseWriter, r *http.Request) error {
			fn.WriteJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id")})
			return nil
		})
		return &fn.Function{Routes: []fn.Route{
			{Method: "POST", Path: "/api/echo/{id}", Scope: auth.SimulationRun, Handler: echoHandler},
			{Method: "GET", Path: "/api/echo/{id}", Scope: auth.SimulationRead, Handler: read, Query: []string{"status", "limit"}},
			{Method: "DELETE", Path: "/api/echo/{id}", Scope: auth.SimulationRun, Handler: read},
			{Method: "POST", Path: "/api/small", Scope: auth.SimulationRun, Handler: echoHandler, MaxBodyBytes: 64},
		}, Events: map[string]cloudevent.Handler{
			events.TypeDatasetDownloaded: func(context.Context, cloudevent.Event) error { handled.Add(1); return nil },
		}}, nil
	}
}

// testServer is a function served over httptest with a token carrying every scope.
type testServer struct {
	*httptest.Server
	fn    *fn.Server
	token string
}

func newServer(t *testing.T, handled *atomic.Int32) *httptest.Server {
	return newTestServer(t, handled, nil).Server
}

func newTestServer(t *testing.T, handled *atomic.Int32, extra map[string]string) *testServer {
	t.Helper()
	e := storeEnv(t, map[string]string{"HOME": t.TempDir()})
	for k, v := range extra {
		e[k] = v
	}
	cfg, err := fn.LoadConfig(env(e))
	if err != nil {
		t.Fatal(err)
	}
	s, srv := serve(t, cfg, "echo", testBuilder(handled))
	token, _, err := s.Deps.Tokens.Create(context.Background(), "test", auth.Scopes)
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{Server: srv, fn: s, token: token}
}

// serve builds the function and serves it until the test ends.
func serve(t *testing.T, cfg fn.Config, name string, build fn.Builder) (*fn.Server, *httptest.Server) {
	t.Helper()
	s, err := fn.NewServer(context.Background(), cfg, name, build)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	return s, srv
}

// deliver posts an empty dataset.downloaded event with the id from source /test.
func deliver(t *testing.T, baseURL, id string) *http.Response {
	t.Helper()
	resp, _ := do(t, "POST", baseURL+"/events", `{}`, map[string]string{"Ce-Specversion": "1.0", "Ce-Id": id,
		"Ce-Source": "/test", "Ce-Type": events.TypeDatasetDownloaded, "Content-Type": "application/json"})
	return resp
}

func jsonAuth(bearer string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "Authorization": bearer}
}

func do(t *testing.T, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

func TestServerRoutesProbesAndErrors(t *testing.T) {
	ts := newTestServer(t, new(atomic.Int32), nil)
	srv := ts.Server
	bearer := "Bearer " + ts.token
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		contains                 string
	}{
		{"route", "POST", "/api/echo/7", `{"name":"x"}`, jsonAuth(bearer), 200, `"id":"7"`},
		{"unknown field is 422", "POST", "/api/echo/7", `{"name":"x","extra":1}`, jsonAuth(bearer), 422, `"extra_forbidden"`},
		{"wrong type is 422", "POST", "/api/echo/7", `{"name":5}`, jsonAuth(bearer), 422, `"type_error"`},
		{"a wrong type names JSON kinds, not Go types", "POST", "/api/echo/7", `{"name":5}`, jsonAuth(bearer), 422, `expected a string, got a number`},
		{"an array for an object names JSON kinds", "POST", "/api/echo/7", `[1]`, jsonAuth(bearer), 422, `expected a JSON object, got an array`},
		{"declared query parameters pass", "GET", "/api/echo/7?status=running&limit=2", ``, map[string]string{"Authorization": bearer}, 200, `"id":"7"`},
		{"a misspelt query parameter is 422 naming it", "GET", "/api/echo/7?stauts=running", ``, map[string]string{"Authorization": bearer}, 422,
			`{"loc":["query","stauts"],"msg":"unknown query parameter; this route accepts status, limit","type":"extra_forbidden"}`},
		{"a route without parameters refuses any", "POST", "/api/echo/7?x=1", `{"name":"x"}`, jsonAuth(bearer), 422, `this route takes no query parameters`},
		{"empty body is 422", "POST", "/api/echo/7", ``, jsonAuth(bearer), 422, `"missing"`},
		{"semantic error is 400", "POST", "/api/echo/7", `{"name":""}`, jsonAuth(bearer), 400, `"bad_request"`},
		{"healthz", "GET", "/healthz", ``, nil, 200, "ok"},
		{"readyz checks the store", "GET", "/readyz", ``, nil, 200, "ready"},
		{"kubelet probe", "GET", "/anything", ``, map[string]string{"User-Agent": "kube-probe/1.29"}, 200, ""},
		{"knative network probe", "GET", "/", ``, map[string]string{"K-Network-Probe": "probe", "K-Network-Hash": "abc"}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, srv.URL+tc.path, tc.body, tc.header)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.contains) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("error content type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
	_, metrics := do(t, "GET", srv.URL+"/metrics", "", nil)
	for _, want := range []string{
		`lens_http_requests_total{code="200",function="echo",method="POST",route="POST /api/echo/{id}"} 1`,
		`lens_http_requests_total{code="422",function="echo",method="POST",route="POST /api/echo/{id}"} 6`,
		`lens_store_operations_total{function="echo",op="ping",outcome="ok"}`,
		`lens_http_request_duration_seconds_bucket{function="echo",method="POST",route="POST /api/echo/{id}"`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestEventsAreDeduplicatedThroughTheStore(t *testing.T) {
	var handled atomic.Int32
	srv := newServer(t, &handled)
	header := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "e-1", "Ce-Source": "/test", "Content-Type": "application/json",
		"Ce-Type": events.TypeDatasetDownloaded}
	for i, want := range []int{202, 200, 200} {
		resp, body := do(t, "POST", srv.URL+"/events", `{}`, header)
		if resp.StatusCode != want {
			t.Fatalf("delivery %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if handled.Load() != 1 {
		t.Fatalf("handled %d times", handled.Load())
	}
	_, metrics := do(t, "GET", srv.URL+"/metrics", "", nil)
	if !strings.Contains(metrics, `lens_events_received_total{function="echo",outcome="duplicate",type="`+events.TypeDatasetDownloaded+`"} 2`) {
		t.Errorf("duplicate deliveries not counted:\n%s", grep(metrics, "lens_events"))
	}
}

func grep(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRunDrainsInFlightRequestsOnShutdown: a request in flight when SIGTERM arrives completes.
func TestRunDrainsInFlightRequestsOnShutdown(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg, _ := fn.LoadConfig(env(storeEnv(t, map[string]string{"HOME": t.TempDir(), "PORT": strconv.Itoa(port),
		"LENS_DRAIN_QUIET_PERIOD": "200ms"})))
	release, entered := make(chan struct{}), make(chan struct{})
	build := func(context.Context, fn.Deps) (*fn.Function, error) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			_, _ = w.Write([]byte("done"))
		})
		return &fn.Function{Routes: []fn.Route{{Method: "GET", Path: "/slow", Scope: auth.Public, Handler: mux}}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- fn.Run(ctx, cfg, "slow", build) }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server did not start")
		}
	}
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	<-entered // the request is in flight
	cancel()
	// The drain has begun once the kubelet's probe is refused; only then is the request let go.
	for deadline := time.Now().Add(10 * time.Second); !draining(base); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server never started draining")
		}
	}
	close(release)
	if body := <-got; body != "done" {
		t.Fatalf("in-flight request got %q", body)
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after the drain")
	}
}

// TestStartRunsAfterListenStopsAtDrainAndReturnsBeforeClose: the Start hook finds the server
// already answering, its context ends when the drain begins, and Close runs only after it returned.
func TestStartRunsAfterListenStopsAtDrainAndReturnsBeforeClose(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg, _ := fn.LoadConfig(env(storeEnv(t, map[string]string{"HOME": t.TempDir(), "PORT": strconv.Itoa(port),
		"LENS_DRAIN_QUIET_PERIOD": "50ms"})))
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	var (
		startedListening = make(chan bool, 1)
		startReturned    atomic.Bool
		closeSawReturned = make(chan bool, 1)
	)
	build := func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		return &fn.Function{
			Start: func(ctx context.Context) {
				resp, err := http.Get(base + "/healthz")
				if err == nil {
					resp.Body.Close()
				}
				startedListening <- err == nil
				<-ctx.Done()
				// a loop finishing its last round after the drain began: Close must wait for it
				time.Sleep(100 * time.Millisecond)
				if err := d.Store.Ping(context.Background()); err != nil {
					t.Errorf("the store was closed under a running Start hook: %v", err)
				}
				startReturned.Store(true)
			},
			Close: func(context.Context) error {
				closeSawReturned <- startReturned.Load()
				return nil
			},
		}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- fn.Run(ctx, cfg, "looper", build) }()
	select {
	case ok := <-startedListening:
		if !ok {
			t.Fatal("Start ran before the server answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start was never called")
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	if !<-closeSawReturned {
		t.Fatal("Close ran while the Start hook was still running")
	}
}

// TestRestartedInstanceTakesOverTheClaimItsCrashLeft: a delivery claim left pending by a crashed
// process of this instance (same POD_NAME, earlier incarnation) does not answer the redelivery
// with a false 429; a claim another live instance holds still does.
func TestRestartedInstanceTakesOverTheClaimItsCrashLeft(t *testing.T) {
	cfg, err := fn.LoadConfig(env(storeEnv(t, map[string]string{"HOME": t.TempDir(), "POD_NAME": "analyzer-0"})))
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	s, srv := serve(t, cfg, "echo", testBuilder(&handled))
	ctx := context.Background()
	crashed := state.ClaimOwner{Instance: "analyzer-0", Incarnation: "before-the-crash"}
	live := state.ClaimOwner{Instance: "analyzer-1", Incarnation: "running"}
	for id, owner := range map[string]state.ClaimOwner{"crashed": crashed, "live": live} {
		if c, err := s.Deps.Store.Claim(ctx, "ce:/test "+id, owner, time.Hour); err != nil || c.State != state.ClaimNew {
			t.Fatalf("%+v %v", c, err)
		}
	}
	if got := deliver(t, srv.URL, "crashed").StatusCode; got != http.StatusAccepted || handled.Load() != 1 {
		t.Fatalf("redelivery after a crash of this instance: %d (handled %d), want 202", got, handled.Load())
	}
	if got := deliver(t, srv.URL, "live").StatusCode; got != http.StatusTooManyRequests {
		t.Fatalf("delivery racing another instance: %d, want 429", got)
	}
}

// draining reports whether the server at base refuses the kubelet's readiness probe, which
// the runtime's drainer does from the moment the drain begins.
func draining(base string) bool {
	req, _ := http.NewRequest("GET", base+"/readyz", nil)
	req.Header.Set("User-Agent", "kube-probe/1.30")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusServiceUnavailable
}

// A function still warming up is ready (it serves) and its /readyz lists what is still in
// progress, one "warming: " line each, until nothing is.
func TestReadyzListsWarmingWork(t *testing.T) {
	cfg, err := fn.LoadConfig(env(storeEnv(t, map[string]string{"HOME": t.TempDir()})))
	if err != nil {
		t.Fatal(err)
	}
	var warming atomic.Pointer[[]string]
	warming.Store(&[]string{"compiling WASM module mooncake_trace", "compiling WASM module constant"})
	_, srv := serve(t, cfg, "echo", func(ctx context.Context, d fn.Deps) (*fn.Function, error) {
		f, err := testBuilder(new(atomic.Int32))(ctx, d)
		if f != nil {
			f.Warming = func() []string { return *warming.Load() }
		}
		return f, err
	})
	resp, body := do(t, "GET", srv.URL+"/readyz", "", nil)
	want := "ready\nwarming: compiling WASM module mooncake_trace\nwarming: compiling WASM module constant\n"
	if resp.StatusCode != http.StatusOK || body != want {
		t.Fatalf("while warming: %d %q, want 200 %q", resp.StatusCode, body, want)
	}
	warming.Store(&[]string{})
	if resp, body := do(t, "GET", srv.URL+"/readyz", "", nil); resp.StatusCode != http.StatusOK || body != "ready\n" {
		t.Fatalf("after warming: %d %q", resp.StatusCode, body)
	}
}
