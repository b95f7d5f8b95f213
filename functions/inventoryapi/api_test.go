package inventoryapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lensfn/lensfn/functions/inventoryapi"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
	"github.com/lensfn/lensfn/runtime/secret"
)

// fakeEndpoint is an OpenAI-compatible model list that can require a key and go down.
type fakeEndpoint struct {
	*httptest.Server
	models   []string
	key      string
	down     atomic.Bool
	hits     atomic.Int32
	mu       sync.Mutex
	lastAuth string
}

func newFakeEndpoint(t *testing.T, key string, models ...string) *fakeEndpoint {
	t.Helper()
	f := &fakeEndpoint{models: models, key: key}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.mu.Lock()
		f.lastAuth = r.Header.Get("Authorization")
		f.mu.Unlock()
		if f.down.Load() {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		data := []map[string]string{}
		for _, m := range f.models {
			data = append(data, map[string]string{"id": m, "object": "model"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeEndpoint) auth() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastAuth
}

type harness struct {
	url    string
	api    *inventoryapi.API
	server *fn.Server
	token  string // every scope; call sends it
}

func newHarness(t *testing.T, cfg inventoryapi.Config) *harness {
	t.Helper()
	return newHarnessEnv(t, cfg, nil)
}

func newHarnessEnv(t testing.TB, cfg inventoryapi.Config, extra map[string]string) *harness {
	t.Helper()
	env := fntest.Env(t, map[string]string{"LENS_SECRET_KEY": secret.NewKey()})
	for k, v := range extra {
		env[k] = v
	}
	var api *inventoryapi.API
	s, err := fn.NewServer(context.Background(), fntest.Config(t, env), inventoryapi.Name, func(_ context.Context, d fn.Deps) (*fn.Function, error) {
		f, a, err := inventoryapi.New(d, cfg)
		api = a
		return f, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	return &harness{url: srv.URL, api: api, server: s, token: fntest.Token(t, s)}
}

// quietConfig probes members only when a test asks (an hour between sweeps).
var quietConfig = inventoryapi.Config{ProbeInterval: time.Hour, ProbeTimeout: 2 * time.Second}

func (h *harness) call(t *testing.T, method, path, body string, out any) (int, string) {
	t.Helper()
	return h.callAs(t, h.token, method, path, body, out)
}

func (h *harness) callAs(t *testing.T, token, method, path, body string, out any) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, h.url+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s %s: %d without problem+json: %s", method, path, resp.StatusCode, raw)
	}
	if out != nil && resp.StatusCode < 300 && resp.StatusCode != 204 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

func (h *harness) expect(t *testing.T, method, path, body string, want int) string {
	t.Helper()
	code, raw := h.call(t, method, path, body, nil)
	if code != want {
		t.Fatalf("%s %s %s: %d, want %d: %s", method, path, body, code, want, raw)
	}
	return raw
}

func (h *harness) session(t *testing.T, name string) string {
	t.Helper()
	var c inventory.Cluster
	if code, raw := h.call(t, "POST", "/api/cluster/clusters", `{"name":"`+name+`","kind":"local","namespace":"lens-dev"}`, &c); code != 201 {
		t.Fatalf("create cluster: %d %s", code, raw)
	}
	return c.SessionID
}

func (h *harness) register(t *testing.T, session, endpoint, model, key string) inventory.Execution {
	t.Helper()
	body := map[string]string{"cluster_session_id": session, "name": "sim", "model": model, "endpoint": endpoint}
	if key != "" {
		body["api_key"] = key
	}
	raw, _ := json.Marshal(body)
	var e inventory.Execution
	if code, resp := h.call(t, "POST", "/api/v1/deployments/executions", string(raw), &e); code != 201 {
		t.Fatalf("register: %d %s", code, resp)
	}
	return e
}

// A kubeconfig is accepted with inline credentials only: each refused feature (an exec plugin,
// an auth-provider, a token or certificate file, a proxy, basic auth, a current context that
// resolves nowhere, a refused field behind another context) is a 422 naming the field, with
// nothing of the kubeconfig in the answer, and no cluster is registered; an inline token and an
// inline client certificate are registered.
func TestClustersTakeInlineKubeconfigsOnly(t *testing.T) {
	h := newHarness(t, quietConfig)
	register := func(name, kubeconfig string) (int, string) {
		body, _ := json.Marshal(map[string]string{"name": name, "kind": "kubernetes", "kubeconfig": kubeconfig, "namespace": "eval"})
		return h.call(t, "POST", "/api/cluster/clusters", string(body), nil)
	}
	for i, tc := range kubeconfigtest.Refused("https://k8s.example:6443", "/nonexistent/marker") {
		t.Run(tc.Name, func(t *testing.T) {
			code, raw := register(fmt.Sprintf("refused-%d", i), tc.Kubeconfig)
			var p struct {
				Detail []struct {
					Loc  []string `json:"loc"`
					Msg  string   `json:"msg"`
					Type string   `json:"type"`
				} `json:"detail"`
			}
			_ = json.Unmarshal([]byte(raw), &p)
			wantLoc := []string{"body", "kubeconfig"}
			if tc.Field != "" {
				wantLoc = append(wantLoc, tc.Field)
			}
			if code != 422 || len(p.Detail) != 1 || !reflect.DeepEqual(p.Detail[0].Loc, wantLoc) || p.Detail[0].Type != "kubeconfig_refused" {
				t.Fatalf("%d %s, want a 422 at %v", code, raw, wantLoc)
			}
			for _, leak := range []string{kubeconfigtest.RefusedToken, "/var/run", "touch", "proxy.example"} {
				if strings.Contains(raw, leak) {
					t.Fatalf("the answer quotes the kubeconfig (%q): %s", leak, raw)
				}
			}
		})
	}
	if code, raw := h.call(t, "GET", "/api/cluster/clusters", "", nil); code != 200 || !strings.Contains(raw, `"total":0`) {
		t.Fatalf("refused kubeconfigs registered clusters: %d %s", code, raw)
	}
	for name, kubeconfig := range map[string]string{
		"token":       kubeconfigtest.Token("https://k8s.example:6443", "kube-secret-token"),
		"certificate": kubeconfigtest.Certificate(t, "https://k8s.example:6443"),
	} {
		if code, raw := register(name, kubeconfig); code != 201 || !strings.Contains(raw, `"has_kubeconfig":true`) {
			t.Fatalf("%s kubeconfig: %d %s", name, code, raw)
		}
	}
}

func TestClusters(t *testing.T) {
	h := newHarness(t, quietConfig)
	var local inventory.Cluster
	if code, raw := h.call(t, "POST", "/api/cluster/clusters", `{"name":"local","kind":"local"}`, &local); code != 201 ||
		local.ID == "" || local.SessionID == "" || local.Kind != "local" || local.HasKubeconfig {
		t.Fatalf("create local: %d %s", code, raw)
	}
	kubeconfig := kubeconfigtest.Token("https://k8s.example:6443", "kube-secret-token")
	body, _ := json.Marshal(map[string]string{"name": "prod", "kind": "kubernetes", "kubeconfig": kubeconfig, "namespace": "eval"})
	raw := h.expect(t, "POST", "/api/cluster/clusters", string(body), 201)
	if strings.Contains(raw, "kube-secret-token") || !strings.Contains(raw, `"has_kubeconfig":true`) || !strings.Contains(raw, `"sessionId":"`) {
		t.Fatalf("kubernetes cluster answer: %s", raw)
	}
	var prod inventory.Cluster
	_ = json.Unmarshal([]byte(raw), &prod)
	if kc, err := h.api.Repo().ClusterKubeconfig(context.Background(), prod.ID); err != nil || kc != kubeconfig {
		t.Fatalf("sealed kubeconfig = %q, %v", kc, err)
	}

	h.expect(t, "POST", "/api/cluster/clusters", `{"name":"local","kind":"local"}`, 409)
	h.expect(t, "POST", "/api/cluster/clusters", `{"name":"x","kind":"local","extra":1}`, 422)
	h.expect(t, "POST", "/api/cluster/clusters", `{"name":"x"}`, 422)
	h.expect(t, "POST", "/api/cluster/clusters", `{"name":"x","kind":"docker"}`, 422)
	h.expect(t, "POST", "/api/cluster/clusters", `{"name":"","kind":"local"}`, 422)
	h.expect(t, "POST", "/api/cluster/clusters", `{"name":"x","kind":"kubernetes"}`, 400)
	h.expect(t, "POST", "/api/cluster/clusters", `{"name":"x","kind":"local","kubeconfig":"k"}`, 400)

	var list struct {
		Items []inventory.Cluster `json:"items"`
		Total int                 `json:"total"`
	}
	if h.call(t, "GET", "/api/cluster/clusters", "", &list); list.Total != 2 || len(list.Items) != 2 || list.Items[0].Name != "prod" {
		t.Fatalf("list: %+v", list)
	}
	if h.call(t, "GET", "/api/cluster/clusters?name=local", "", &list); list.Total != 1 || list.Items[0].ID != local.ID {
		t.Fatalf("list by name: %+v", list)
	}
	if h.call(t, "GET", "/api/cluster/clusters?name=nope", "", &list); list.Total != 0 || list.Items == nil {
		t.Fatalf("list by unknown name: %+v", list)
	}
	h.expect(t, "GET", "/api/cluster/clusters?limit=0", "", 422)
	h.expect(t, "GET", "/api/cluster/clusters/"+inventory.NewID(), "", 404)
	raw = h.expect(t, "GET", "/api/cluster/clusters/"+prod.ID, "", 200)
	if strings.Contains(raw, "kube-secret-token") || strings.Contains(raw, "sealed") {
		t.Fatalf("GET cluster leaks the kubeconfig: %s", raw)
	}

	var next inventory.Session
	if code, raw := h.call(t, "POST", "/api/cluster/clusters/"+local.ID+"/sessions", "", &next); code != 201 ||
		next.Status != "active" || next.ClusterID != local.ID || next.ID == local.SessionID {
		t.Fatalf("open session: %d %s", code, raw)
	}
	var again inventory.Cluster
	if h.call(t, "GET", "/api/cluster/clusters/"+local.ID, "", &again); again.SessionID != next.ID {
		t.Fatalf("cluster session = %s, want %s", again.SessionID, next.ID)
	}
	var old inventory.Session
	if h.call(t, "GET", "/api/cluster/sessions/"+local.SessionID, "", &old); old.Status != "closed" {
		t.Fatalf("the replaced session is %s", old.Status)
	}
	h.expect(t, "POST", "/api/cluster/clusters/"+inventory.NewID()+"/sessions", "", 404)
	h.expect(t, "GET", "/api/cluster/sessions/nope", "", 404)
	h.expect(t, "PUT", "/api/cluster/clusters", `{}`, 405)
	h.expect(t, "GET", "/api/cluster/nothing", "", 404)
}

// TestScopes: writes need inventory:admin, reads evaluate:run:read (LENS_AUTH=required).
func TestScopes(t *testing.T) {
	h := newHarness(t, quietConfig)
	reader := fntest.Token(t, h.server, auth.EvaluateRunRead)
	writes := [][2]string{{"POST", "/api/cluster/clusters"}, {"POST", "/api/cluster/clusters/x/sessions"},
		{"POST", "/api/v1/deployments/executions"}, {"DELETE", "/api/v1/deployments/executions/x"},
		{"POST", "/api/v1/model-services"}, {"DELETE", "/api/v1/model-services/x"}, {"POST", "/api/v1/configurations"}}
	reads := []string{"/api/cluster/clusters", "/api/cluster/clusters/x", "/api/cluster/sessions/x", "/api/v1/deployments/executions",
		"/api/v1/deployments/executions/x", "/api/v1/model-services", "/api/v1/model-services/x", "/api/v1/configurations", "/api/v1/configurations/x"}
	for _, w := range writes {
		if code, _ := h.callAs(t, "", w[0], w[1], `{}`, nil); code != 401 {
			t.Errorf("%s %s without a token: %d", w[0], w[1], code)
		}
		if code, _ := h.callAs(t, reader, w[0], w[1], `{}`, nil); code != 403 {
			t.Errorf("%s %s with a read token: %d", w[0], w[1], code)
		}
	}
	for _, path := range reads {
		if code, _ := h.callAs(t, "", "GET", path, "", nil); code != 401 {
			t.Errorf("GET %s without a token: %d", path, code)
		}
		if code, _ := h.callAs(t, reader, "GET", path, "", nil); code != 200 && code != 404 {
			t.Errorf("GET %s with a read token: %d", path, code)
		}
	}
}

func TestExecutions(t *testing.T) {
	h := newHarness(t, quietConfig)
	sim := newFakeEndpoint(t, "sk-endpoint-key", "fake-model", "other")
	session := h.session(t, "local")

	body := `{"cluster_session_id":"` + session + `","name":"sim","model":"fake-model","endpoint":"` + sim.URL + `/v1","api_key":"sk-endpoint-key"}`
	raw := h.expect(t, "POST", "/api/v1/deployments/executions", body, 201)
	if strings.Contains(raw, "sk-endpoint-key") {
		t.Fatalf("the answer shows the key: %s", raw)
	}
	var e inventory.Execution
	_ = json.Unmarshal([]byte(raw), &e)
	if e.Ownership != "existing-endpoint" || e.Status != "ready" || !e.HasAPIKey || e.Namespace != "lens-dev" ||
		e.Endpoint != sim.URL+"/v1" || len(e.Models) != 2 {
		t.Fatalf("execution: %s", raw)
	}
	if sim.auth() != "Bearer sk-endpoint-key" {
		t.Fatalf("the probe sent %q", sim.auth())
	}
	if !strings.Contains(raw, `"deployment_ownership":"existing-endpoint"`) || !strings.Contains(raw, `"cluster_session_id":"`+session) {
		t.Fatalf("field names: %s", raw)
	}
	if key, _ := h.api.Repo().ExecutionAPIKey(context.Background(), e.ID); key != "sk-endpoint-key" {
		t.Fatalf("stored key = %q", key)
	}

	register := func(model, endpoint, key string) string {
		m := map[string]string{"cluster_session_id": session, "name": "x", "model": model, "endpoint": endpoint}
		if key != "" {
			m["api_key"] = key
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	if raw := h.expect(t, "POST", "/api/v1/deployments/executions", register("missing-model", sim.URL+"/v1", "sk-endpoint-key"), 400); !strings.Contains(raw, "does not serve model") {
		t.Fatalf("missing model: %s", raw)
	}
	if raw := h.expect(t, "POST", "/api/v1/deployments/executions", register("fake-model", sim.URL+"/v1", "sk-wrong"), 400); strings.Contains(raw, "sk-wrong") {
		t.Fatalf("the refusal echoes the key: %s", raw)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	h.expect(t, "POST", "/api/v1/deployments/executions", register("fake-model", dead.URL+"/v1", ""), 400)
	h.expect(t, "POST", "/api/v1/deployments/executions", register("fake-model", "ftp://host/v1", ""), 422)
	h.expect(t, "POST", "/api/v1/deployments/executions", register("fake-model", "http://user:pw@host/v1", ""), 422)
	h.expect(t, "POST", "/api/v1/deployments/executions", `{"cluster_session_id":"`+session+`","name":"x","model":"m"}`, 422)
	h.expect(t, "POST", "/api/v1/deployments/executions", `{"cluster_session_id":"`+session+`","name":"x","model":"m","endpoint":"http://h/v1","ownership":"evaluation"}`, 422)
	unknown := strings.Replace(register("fake-model", sim.URL+"/v1", "sk-endpoint-key"), session, inventory.NewID(), 1)
	h.expect(t, "POST", "/api/v1/deployments/executions", unknown, 404)

	var list struct {
		Items []inventory.Execution `json:"items"`
		Total int                   `json:"total"`
	}
	if h.call(t, "GET", "/api/v1/deployments/executions?deployment_ownership=existing-endpoint&cluster_session_id="+session, "", &list); list.Total != 1 || list.Items[0].ID != e.ID {
		t.Fatalf("list: %+v", list)
	}
	if h.call(t, "GET", "/api/v1/deployments/executions?deployment_ownership=evaluation", "", &list); list.Total != 0 {
		t.Fatalf("list evaluation-owned: %+v", list)
	}
	h.expect(t, "GET", "/api/v1/deployments/executions?status=not%20a%20status", "", 422)
	h.expect(t, "GET", "/api/v1/deployments/executions/"+e.ID, "", 200)
	h.expect(t, "GET", "/api/v1/deployments/executions/"+inventory.NewID(), "", 404)

	// A run using it blocks the delete until it is released.
	ctx := context.Background()
	if err := h.api.Repo().AcquireUse(ctx, e.ID, "run-1"); err != nil {
		t.Fatal(err)
	}
	if raw := h.expect(t, "DELETE", "/api/v1/deployments/executions/"+e.ID, "", 409); !strings.Contains(raw, "run-1") {
		t.Fatalf("409 does not say which run: %s", raw)
	}
	if err := h.api.Repo().ReleaseUse(ctx, e.ID, "run-1"); err != nil {
		t.Fatal(err)
	}
	// A use left behind by a run that ended (a process stopped between cancelling a queued run
	// and releasing its use) does not block the delete; a running run's use still does.
	runs := &evalrun.Repo{Store: h.api.Repo().Store}
	for id, status := range map[string]string{"run-cancelled": evalrun.StatusCancelled, "run-running": evalrun.StatusRunning} {
		run := evalrun.New(id)
		run.Status = status
		if err := runs.Create(ctx, run, ""); err != nil {
			t.Fatal(err)
		}
		if err := h.api.Repo().AcquireUse(ctx, e.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	if raw := h.expect(t, "DELETE", "/api/v1/deployments/executions/"+e.ID, "", 409); !strings.Contains(raw, "run-running") {
		t.Fatalf("409 does not name the running run: %s", raw)
	}
	if err := h.api.Repo().ReleaseUse(ctx, e.ID, "run-running"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "DELETE", "/api/v1/deployments/executions/"+e.ID, "", 204)
	h.expect(t, "GET", "/api/v1/deployments/executions/"+e.ID, "", 404)
	h.expect(t, "DELETE", "/api/v1/deployments/executions/"+e.ID, "", 404)

	// A closed session takes no new executions.
	clusters := struct{ Items []inventory.Cluster }{}
	h.call(t, "GET", "/api/cluster/clusters?name=local", "", &clusters)
	h.expect(t, "POST", "/api/cluster/clusters/"+clusters.Items[0].ID+"/sessions", "", 201)
	h.expect(t, "POST", "/api/v1/deployments/executions", register("fake-model", sim.URL+"/v1", "sk-endpoint-key"), 409)
}

func TestRegistrationFollowsTheEndpointPolicy(t *testing.T) {
	h := newHarnessEnv(t, quietConfig, map[string]string{"LENS_ENDPOINT_DENY": "127.0.0.0/8"})
	sim := newFakeEndpoint(t, "", "fake-model")
	body := `{"cluster_session_id":"` + h.session(t, "local") + `","name":"sim","model":"fake-model","endpoint":"` + sim.URL + `/v1"}`
	if raw := h.expect(t, "POST", "/api/v1/deployments/executions", body, 400); !strings.Contains(raw, "not allowed") {
		t.Fatalf("denied endpoint: %s", raw)
	}
	if sim.auth() != "" || sim.hits.Load() != 0 {
		t.Fatal("the denied endpoint was called")
	}
}

func TestRedirectsAreNotFollowedWithTheKey(t *testing.T) {
	h := newHarness(t, quietConfig)
	target := newFakeEndpoint(t, "", "fake-model")
	redirector := httptest.NewServer(http.RedirectHandler(target.URL+"/v1/models", http.StatusFound))
	t.Cleanup(redirector.Close)
	body := `{"cluster_session_id":"` + h.session(t, "local") + `","name":"sim","model":"fake-model","endpoint":"` + redirector.URL + `/v1","api_key":"sk-x"}`
	h.expect(t, "POST", "/api/v1/deployments/executions", body, 400)
	if target.hits.Load() != 0 {
		t.Fatal("the probe followed the redirect")
	}
}

func TestModelServices(t *testing.T) {
	h := newHarness(t, quietConfig)
	session := h.session(t, "local")
	a := newFakeEndpoint(t, "", "fake-model", "chat-model")
	b := newFakeEndpoint(t, "sk-b", "fake-model", "chat-model")
	ea, eb := h.register(t, session, a.URL+"/v1", "fake-model", ""), h.register(t, session, b.URL+"/v1", "fake-model", "sk-b")
	a.down.Store(true) // a is down when the service is published

	body := `{"name":"chat","published_name":"chat-model","cluster_session_id":"` + session + `","member_execution_ids":["` + ea.ID + `","` + eb.ID + `"]}`
	var created inventoryapi.CreatedModelService
	code, raw := h.call(t, "POST", "/api/v1/model-services", body, &created)
	if code != 201 || !strings.HasPrefix(created.AccessKey, "lens-mk-") || created.PublishedName != "chat-model" {
		t.Fatalf("create: %d %s", code, raw)
	}
	if created.ActiveMember == nil || *created.ActiveMember != eb.ID || created.Status != "available" ||
		created.Members[0].Health != "unhealthy" || created.Members[1].Health != "healthy" || !strings.Contains(created.Members[0].LastError, "unreachable") {
		t.Fatalf("health after the first probe: %s", raw)
	}
	for _, m := range created.Members {
		if m.LastProbeAt == nil || time.Since(*m.LastProbeAt) > time.Minute || time.Since(*m.LastProbeAt) < 0 {
			t.Errorf("member %s: last_probe_at %v, want the probe just made", m.ExecutionID, m.LastProbeAt)
		}
	}
	got := h.expect(t, "GET", "/api/v1/model-services/"+created.ID, "", 200)
	if strings.Contains(got, created.AccessKey) || strings.Contains(got, "hash") || strings.Contains(got, "sk-b") {
		t.Fatalf("GET shows a secret: %s", got)
	}
	sum := sha256.Sum256([]byte(created.AccessKey))
	if strings.Contains(got, hex.EncodeToString(sum[:])) {
		t.Fatal("GET shows the key hash")
	}

	ctx := context.Background()
	e, name, err := h.api.Repo().ResolveModelService(ctx, created.ID, created.AccessKey)
	if err != nil || e.ID != eb.ID || name != "chat-model" {
		t.Fatalf("resolve: %s %s %v", e.ID, name, err)
	}

	// b goes down and a comes back: the next sweep moves the active member.
	b.down.Store(true)
	a.down.Store(false)
	if err := h.api.Prober().Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	var after inventory.ModelService
	h.call(t, "GET", "/api/v1/model-services/"+created.ID, "", &after)
	if after.ActiveMember == nil || *after.ActiveMember != ea.ID || after.Members[1].Health != "unhealthy" || after.Members[0].Health != "healthy" {
		t.Fatalf("after the sweep: %+v", after)
	}

	// Validation.
	only := newFakeEndpoint(t, "", "fake-model")
	eo := h.register(t, session, only.URL+"/v1", "fake-model", "")
	if raw := h.expect(t, "POST", "/api/v1/model-services", `{"name":"x","published_name":"chat-model","cluster_session_id":"`+session+`","member_execution_ids":["`+eo.ID+`"]}`, 400); !strings.Contains(raw, `not \"chat-model\"`) {
		t.Fatalf("a member that does not serve the published name: %s", raw)
	}
	h.expect(t, "POST", "/api/v1/model-services", `{"name":"x","published_name":"x","cluster_session_id":"`+session+`","member_execution_ids":[]}`, 422)
	h.expect(t, "POST", "/api/v1/model-services", `{"name":"x","published_name":"x","cluster_session_id":"`+session+`"}`, 422)
	h.expect(t, "POST", "/api/v1/model-services", `{"name":"x","published_name":"x","cluster_session_id":"`+session+`","member_execution_ids":["`+inventory.NewID()+`"]}`, 400)
	h.expect(t, "POST", "/api/v1/model-services", `{"name":"x","published_name":"x","cluster_session_id":"`+inventory.NewID()+`","member_execution_ids":["`+ea.ID+`"]}`, 404)
	h.expect(t, "POST", "/api/v1/model-services", `{"name":"x","published_name":"x","cluster_session_id":"`+session+`","member_execution_ids":["`+ea.ID+`"],"key":"k"}`, 422)

	var list struct {
		Items []inventory.ModelService `json:"items"`
		Total int                      `json:"total"`
	}
	if h.call(t, "GET", "/api/v1/model-services?published_name=chat-model", "", &list); list.Total != 1 || list.Items[0].ID != created.ID {
		t.Fatalf("list: %+v", list)
	}
	h.expect(t, "DELETE", "/api/v1/deployments/executions/"+ea.ID, "", 409) // still a member
	h.expect(t, "DELETE", "/api/v1/model-services/"+created.ID, "", 204)
	h.expect(t, "GET", "/api/v1/model-services/"+created.ID, "", 404)
	h.expect(t, "DELETE", "/api/v1/model-services/"+created.ID, "", 404)
	h.expect(t, "DELETE", "/api/v1/deployments/executions/"+ea.ID, "", 204)
}

func TestTheHealthLoopProbesOnItsInterval(t *testing.T) {
	h := newHarness(t, inventoryapi.Config{ProbeInterval: 50 * time.Millisecond, ProbeTimeout: time.Second})
	h.server.Start(context.Background()) // what Run does once the server listens; Close stops it
	session := h.session(t, "local")
	a := newFakeEndpoint(t, "", "fake-model")
	ea := h.register(t, session, a.URL+"/v1", "fake-model", "")
	var created inventoryapi.CreatedModelService
	h.call(t, "POST", "/api/v1/model-services", `{"name":"chat","published_name":"fake-model","cluster_session_id":"`+session+`","member_execution_ids":["`+ea.ID+`"]}`, &created)
	if created.Status != "available" {
		t.Fatalf("created: %+v", created)
	}
	a.down.Store(true)
	waitFor(t, "the loop to see the member down", func() bool {
		var g inventory.ModelService
		h.call(t, "GET", "/api/v1/model-services/"+created.ID, "", &g)
		return g.Status == "unavailable" && g.ActiveMember == nil && g.Members[0].Health == "unhealthy"
	})
	_, _, err := h.api.Repo().ResolveModelService(context.Background(), created.ID, created.AccessKey)
	if err == nil {
		t.Fatal("resolved a service with no healthy member")
	}
	metrics := h.expect(t, "GET", "/metrics", "", 200)
	if !strings.Contains(metrics, `lens_inventory_member_probes_total{outcome="unhealthy"}`) ||
		!strings.Contains(metrics, `lens_inventory_member_probes_total{outcome="healthy"}`) ||
		!strings.Contains(metrics, `lens_inventory_endpoint_probes_total{outcome="ok"} 1`) {
		t.Fatalf("metrics:\n%s", metrics)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestConfigurations(t *testing.T) {
	h := newHarness(t, quietConfig)
	body := `{"name":"guide-a","schema_version":"deployable-configuration.v1","type":"guide","format":"lensfn",
	  "provider_ref":"optimized-baseline","content":{"model": {"name": "Qwen/Qwen3-8B"}, "decode": {"replicas": 2}},"provenance":{"source":"test"}}`
	var c inventory.Configuration
	if code, raw := h.call(t, "POST", "/api/v1/configurations", body, &c); code != 201 || c.ID == "" {
		t.Fatalf("create: %d %s", code, raw)
	}
	sum := sha256.Sum256([]byte(`{"model":{"name":"Qwen/Qwen3-8B"},"decode":{"replicas":2}}`))
	if c.Checksum != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("checksum %s", c.Checksum)
	}
	var got inventory.Configuration
	h.call(t, "GET", "/api/v1/configurations/"+c.ID, "", &got)
	if string(got.Content) != `{"model":{"name":"Qwen/Qwen3-8B"},"decode":{"replicas":2}}` || string(got.Provenance) != `{"source":"test"}` ||
		got.SchemaVersion != "deployable-configuration.v1" || got.Type != "guide" || got.Format != "lensfn" || got.ProviderRef != "optimized-baseline" {
		t.Fatalf("get: %+v", got)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
		Total int               `json:"total"`
	}
	if h.call(t, "GET", "/api/v1/configurations?type=guide", "", &list); list.Total != 1 || strings.Contains(string(list.Items[0]), "Qwen") {
		t.Fatalf("list: %d %s", list.Total, list.Items)
	}
	if h.call(t, "GET", "/api/v1/configurations?type=baseline", "", &list); list.Total != 0 {
		t.Fatalf("list baseline: %d", list.Total)
	}
	h.expect(t, "GET", "/api/v1/configurations/"+inventory.NewID(), "", 404)

	valid := map[string]any{"name": "n", "schema_version": "deployable-configuration.v1", "type": "baseline", "format": "lensfn",
		"provider_ref": "p", "content": map[string]any{}}
	for field, bad := range map[string]any{"schema_version": "v2", "type": "canary", "format": "helm", "content": []int{1}, "name": "",
		"provenance": "text"} {
		m := map[string]any{}
		for k, v := range valid {
			m[k] = v
		}
		m[field] = bad
		raw, _ := json.Marshal(m)
		if resp := h.expect(t, "POST", "/api/v1/configurations", string(raw), 422); !strings.Contains(resp, field) {
			t.Fatalf("%s: the 422 does not name the field: %s", field, resp)
		}
	}
	raw, _ := json.Marshal(valid)
	h.expect(t, "POST", "/api/v1/configurations", strings.Replace(string(raw), `"name"`, `"extra":1,"name"`, 1), 422)
	h.expect(t, "POST", "/api/v1/configurations", strings.Replace(string(raw), `"content":{},`, ``, 1), 422)
	big := strings.Replace(string(raw), `"content":{}`, `"content":{"x":"`+strings.Repeat("a", inventory.MaxConfigurationContentBytes)+`"}`, 1)
	h.expect(t, "POST", "/api/v1/configurations", big, 413)
}

// TestOneInstanceSweepsAtATime: the probe lease lets one prober sweep; when it stops it gives the
// lease up and another takes over at once.
func TestOneInstanceSweepsAtATime(t *testing.T) {
	// A store of its own: no function's prober competes for the lease.
	repo := &inventory.Repo{Store: fntest.Deps(t, "probe-test", fntest.Env(t, nil)).Store}
	prober := func(owner string) (*inventoryapi.Prober, prometheus.Counter) {
		sweeps := prometheus.NewCounter(prometheus.CounterOpts{Name: "sweeps"})
		return &inventoryapi.Prober{Repo: repo, Store: repo.Store, Client: http.DefaultClient, Owner: owner,
			Interval: time.Hour, Timeout: time.Second, Sweeps: sweeps, Log: func(string, ...any) {},
			Probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "probes"}, []string{"outcome"})}, sweeps
	}
	ctx := context.Background()
	a, aSweeps := prober("instance-a")
	b, bSweeps := prober("instance-b")
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(runCtx); close(done) }()
	waitFor(t, "instance-a's first sweep", func() bool { return count(aSweeps) == 1 })
	if err := b.SweepIfLeader(ctx); err != nil || count(bSweeps) != 0 {
		t.Fatalf("b swept while a held the lease: %v", err)
	}
	stop()
	<-done
	if err := b.SweepIfLeader(ctx); err != nil || count(bSweeps) != 1 {
		t.Fatalf("b did not take over after a stopped: %v, %v sweeps", err, count(bSweeps))
	}
}

func count(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}
