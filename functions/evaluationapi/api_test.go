package evaluationapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

const sim = `[{"id":"exec-1","cluster_session_id":"session-1","name":"sim","model":"fake-model","endpoint":"http://127.0.0.1:1/v1","namespace":"local"}]`

type harness struct {
	server *fn.Server
	url    string
	deps   fn.Deps
	runs   *evalrun.Repo
}

func start(t testing.TB, extra ...string) *harness {
	t.Helper()
	vars := map[string]string{"LENS_SECRET_KEY": secret.NewKey(), "LENS_STATIC_EXECUTIONS": sim}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	env := fntest.Env(t, vars)
	h := &harness{}
	s, err := fn.NewServer(context.Background(), fntest.Config(t, env), evaluationapi.Name, func(ctx context.Context, d fn.Deps) (*fn.Function, error) {
		h.deps = d
		return evaluationapi.Build(ctx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(func() { srv.Close(); _ = s.Close(context.Background()) })
	h.url, h.server = srv.URL+evaluationapi.Prefix, s
	fntest.AuthorizeDefaultClient(t, s)
	sealer, _ := secret.FromEnv(env["LENS_SECRET_KEY"])
	h.runs = &evalrun.Repo{Store: h.deps.Store, Sealer: sealer, DataDir: h.deps.Config.DataDir}
	return h
}

func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, raw)
		}
	}
	return resp.StatusCode
}

func TestScopes(t *testing.T) {
	h := start(t)
	reader := fntest.Token(t, h.server, auth.EvaluateRunRead)
	do := func(method, url, token, body string) int {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // past the default client's token
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do("GET", h.url+"/runs", "", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code := do("GET", h.url+"/runs", reader, ""); code != 200 {
		t.Fatalf("read scope reading: %d", code)
	}
	if code := do("POST", h.url+"/runs", reader, matrixRun); code != 403 {
		t.Fatalf("read scope creating: %d", code)
	}
	if code := do("POST", h.url+"/runs/x/cancel", reader, ""); code != 403 {
		t.Fatalf("read scope cancelling: %d", code)
	}
}

func TestRunOwnerIsTheCreatingToken(t *testing.T) {
	h := start(t)
	writer := fntest.Token(t, h.server, auth.EvaluateRunWrite, auth.EvaluateRunRead)
	tok, err := h.deps.Tokens.Verify(context.Background(), writer)
	if err != nil {
		t.Fatal(err)
	}
	run := postAs(t, writer, h.url+"/runs", matrixRun)
	if run["owner_user_id"] != tok.ID || strings.Contains(toJSON(run), writer) {
		t.Fatalf("owner_user_id %v, want the token's id %s (and never its secret)", run["owner_user_id"], tok.ID)
	}
	var got map[string]any
	if code := call(t, "GET", h.url+"/runs/"+run["id"].(string), "", &got); code != 200 || got["owner_user_id"] != tok.ID {
		t.Fatalf("get: %d owner %v", code, got["owner_user_id"])
	}
}

// postAs POSTs body with token (past the default client's own token) and wants a 202.
func postAs(t *testing.T, token, url, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 202 {
		t.Fatalf("POST %s: %d %v %v", url, resp.StatusCode, err, out)
	}
	return out
}

func TestBenchmarkDefaults(t *testing.T) {
	h := start(t)
	var d map[string]any
	if code := call(t, "GET", h.url+"/benchmark-defaults", "", &d); code != 200 ||
		d["repository"] != "https://github.com/llm-d/llm-d-benchmark.git" || d["revision"] != "main" ||
		d["mode"] != "managed-source" || d["localRuntimeConfigured"] != false {
		t.Fatalf("%d %v", code, d)
	}
}

// The llm-d-benchmark settings come from the environment: a blank executable is none, a root
// configures a local runtime, and the executable makes it the mode.
func TestBenchmarkDefaultsFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env        []string
		mode       string
		configured bool
	}{
		{[]string{"LLM_D_BENCHMARK_EXECUTABLE", "  "}, "managed-source", false},
		{[]string{"LLM_D_BENCHMARK_ROOT", " /opt/llm-d-benchmark "}, "managed-source", true},
		{[]string{"LLM_D_BENCHMARK_EXECUTABLE", "/usr/local/bin/llmdbenchmark"}, "local-runtime", true},
	} {
		h := start(t, tc.env...)
		var d map[string]any
		if code := call(t, "GET", h.url+"/benchmark-defaults", "", &d); code != 200 || d["mode"] != tc.mode || d["localRuntimeConfigured"] != tc.configured {
			t.Errorf("%v: %d %v", tc.env, code, d)
		}
	}
}

// A bad LENS_STATIC_EXECUTIONS stops the function at start, naming the variable.
func TestBuildRefusesBadStaticExecutions(t *testing.T) {
	cfg := fntest.Config(t, fntest.Env(t, map[string]string{"LENS_SECRET_KEY": secret.NewKey(), "LENS_STATIC_EXECUTIONS": "{"}))
	_, err := fn.NewServer(context.Background(), cfg, evaluationapi.Name, evaluationapi.Build)
	if err == nil || !strings.Contains(err.Error(), "LENS_STATIC_EXECUTIONS is not a JSON array") {
		t.Fatalf("err = %v", err)
	}
}

func TestTimingEstimateOverHTTP(t *testing.T) {
	h := start(t)
	body := `{"wait_timeout_seconds":null,"parallelism":1,"shared_prefix":{"num_groups":4,"num_prompts_per_group":5,
		"system_prompt_len":512,"question_len":128,"output_len":64,"stages":[{"rate":0.4,"duration":20},{"rate":0.8,"duration":20}]}}`
	var got map[string]any
	if code := call(t, "POST", h.url+"/timing-estimate", body, &got); code != 200 {
		t.Fatalf("%d %v", code, got)
	}
	if got["measured_requests"] != 24.0 || got["lower_seconds"] != 160.0 || got["upper_seconds"] != 340.0 || got["timeout_seconds"] != 900.0 ||
		got["basis"] != "configuration" || got["timeout_mode"] != "auto" || got["timeout_warning"] != nil {
		t.Fatalf("estimate %v", got)
	}
	var prob map[string]any
	if code := call(t, "POST", h.url+"/timing-estimate", `{"parallelism":0}`, &prob); code != 422 {
		t.Fatalf("invalid spec: %d %v", code, prob)
	}
	if code := call(t, "POST", h.url+"/timing-estimate", `{"bogus":1}`, &prob); code != 422 || !strings.Contains(toJSON(prob), "bogus") {
		t.Fatalf("unknown field: %d %v", code, prob)
	}
	if code := call(t, "POST", h.url+"/timing-estimate", `{"workload":"custom.yaml"}`, &got); code != 200 || got["basis"] != "unknown" || got["timeout_seconds"] != 7200.0 {
		t.Fatalf("unknown workload: %d %v", code, got)
	}
	// accelerator_profile names a registered profile: a catalogue GPU, an alias, a vendor.
	if code := call(t, "POST", h.url+"/timing-estimate", `{"accelerator_profile":"totally-bogus-profile"}`, &prob); code != 422 ||
		!strings.Contains(toJSON(prob), "accelerator_profile") || !strings.Contains(toJSON(prob), "H100-SXM-80GB") {
		t.Fatalf("bogus accelerator profile: %d %v", code, prob)
	}
	for _, ok := range []string{"nvidia", "H100-SXM-80GB", "h100", "nvidia-h100", "nvidia-l40s", "intel-xpu", "A100-SXM-80GB"} {
		if code := call(t, "POST", h.url+"/timing-estimate", `{"accelerator_profile":"`+ok+`"}`, &got); code != 200 {
			t.Errorf("accelerator profile %q: %d %v", ok, code, got)
		}
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const matrixRun = `{"deployment_execution_id":"exec-1","cluster_session_id":"session-1","harness":"inference-perf",
	"matrix":[{"isl":64,"osl":16}],"concurrency_stages":[{"concurrency":2,"num_requests":8}],"warmup_requests":2,
	"sla_targets":{"ttft_ms":500,"ttft_percentile":"p99"},"storage_class_name":null,"api_key":"sk-never-shown"}`

func TestCreateGetListRun(t *testing.T) {
	h := start(t)
	var run map[string]any
	if code := call(t, "POST", h.url+"/runs", matrixRun, &run); code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id, _ := run["id"].(string)
	if run["status"] != "queued" || run["kind"] != "benchmark" || run["model"] != "fake-model" || run["endpoint"] != "http://127.0.0.1:1/v1" ||
		run["deployment_ownership"] != "existing-endpoint" || run["wait_timeout_seconds"] != 900.0 || run["storage_class_name"] != nil {
		t.Fatalf("run %v", run)
	}
	if _, ok := run["storage_class_name"]; !ok {
		t.Fatal("explicit null storage_class_name dropped")
	}
	if _, ok := run["shared_prefix"]; ok {
		t.Fatal("absent shared_prefix appeared")
	}
	if strings.Contains(toJSON(run), "sk-never-shown") {
		t.Fatal("the API key is in the response")
	}
	bench := run["benchmark"].(map[string]any)
	if bench["wait_timeout_seconds"] != nil || bench["harness_memory_gib"] != 8.0 || bench["parallelism"] != 1.0 {
		t.Fatalf("benchmark %v", bench)
	}
	var got map[string]any
	if code := call(t, "GET", h.url+"/runs/"+id, "", &got); code != 200 || got["id"] != id || got["deployment_cases"] == nil {
		t.Fatalf("get: %d %v", code, got)
	}
	if _, ok := got["configuration"]; !ok {
		t.Fatal("detail lacks configuration")
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if code := call(t, "GET", h.url+"/runs", "", &list); code != 200 || len(list.Items) != 1 || list.Items[0]["id"] != id {
		t.Fatalf("list: %d %v", code, list)
	}
	// The stored key opens for the runner.
	stored, err := h.runs.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if key, err := h.runs.APIKey(stored); err != nil || key != "sk-never-shown" {
		t.Fatalf("key %q %v", key, err)
	}
	if code := call(t, "GET", h.url+"/runs/nope", "", nil); code != 404 {
		t.Fatalf("unknown run: %d", code)
	}
}

func TestCreateRunRejectsBadInput(t *testing.T) {
	h := start(t)
	tests := []struct {
		name, body string
		code       int
	}{
		{"unknown execution", `{"deployment_execution_id":"exec-404"}`, 404},
		{"session mismatch", `{"deployment_execution_id":"exec-1","cluster_session_id":"other"}`, 400},
		{"both targets", `{"deployment_execution_id":"exec-1","model_service_group_id":"g","api_key":"k"}`, 422},
		{"unknown model service", `{"model_service_group_id":"g","api_key":"k"}`, 404},
		{"unknown field", `{"deployment_execution_id":"exec-1","extra":true}`, 422},
		{"harness", `{"deployment_execution_id":"exec-1","harness":"vllm-benchmark"}`, 422},
		{"not JSON", `{`, 422},
		{"empty", ``, 422},
	}
	for _, tc := range tests {
		var prob map[string]any
		if code := call(t, "POST", h.url+"/runs", tc.body, &prob); code != tc.code || prob["code"] == nil {
			t.Errorf("%s: %d %v, want %d problem", tc.name, code, prob, tc.code)
		}
	}
	// A multi-turn shared prefix whose sessions would get too many turns names the stages.
	var prob map[string]any
	tooLong := `{"deployment_execution_id":"exec-1","shared_prefix":{"num_groups":1,"num_prompts_per_group":2,"system_prompt_len":8,
		"question_len":8,"output_len":8,"enable_multi_turn_chat":true,"stages":[{"rate":100,"duration":30}]}}`
	if code := call(t, "POST", h.url+"/runs", tooLong, &prob); code != 422 || !strings.Contains(toJSON(prob), `"shared_prefix","stages"`) ||
		!strings.Contains(toJSON(prob), "turns per session") {
		t.Errorf("multi-turn of 1,500 turns per session: %d %v", code, prob)
	}
	var list struct {
		Items []any `json:"items"`
	}
	call(t, "GET", h.url+"/runs", "", &list)
	if len(list.Items) != 0 {
		t.Fatalf("bad requests stored runs: %v", list.Items)
	}
}

// A field a newer version stored in a run, and the request's explicit null, survive a
// read-modify-write through the API (a cancel) and show in its answers as stored.
func TestUnknownStoredRunFieldsSurviveTheAPI(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	var run map[string]any
	if code := call(t, "POST", h.url+"/runs", matrixRun, &run); code != 201 && code != 200 && code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := run["id"].(string)
	// What a newer version of Lensfn writes: a field this one does not know.
	rec, err := h.deps.Store.Get(ctx, evalrun.Kind, id)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(rec.Doc, &doc); err != nil {
		t.Fatal(err)
	}
	doc["from_a_newer_version"] = json.RawMessage(`{"kept":[1,null,"x"]}`)
	rec.Doc, _ = json.Marshal(doc)
	if _, err := h.deps.Store.Update(ctx, rec, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := call(t, "POST", h.url+"/runs/"+id+"/cancel", "", nil); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	var got map[string]json.RawMessage
	if code := call(t, "GET", h.url+"/runs/"+id, "", &got); code != 200 {
		t.Fatalf("get: %d", code)
	}
	for k, want := range map[string]string{"from_a_newer_version": `{"kept":[1,null,"x"]}`, "storage_class_name": "null",
		"status": `"cancelled"`, "error": "null"} {
		if string(got[k]) != want {
			t.Errorf("%s = %s, want %s", k, got[k], want)
		}
	}
	var list struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	call(t, "GET", h.url+"/runs", "", &list)
	if len(list.Items) != 1 || string(list.Items[0]["from_a_newer_version"]) != `{"kept":[1,null,"x"]}` {
		t.Errorf("list items = %v", list.Items)
	}
	stored, err := h.deps.Store.Get(ctx, evalrun.Kind, id)
	if err != nil || !strings.Contains(string(stored.Doc), `"from_a_newer_version":{"kept":[1,null,"x"]}`) {
		t.Errorf("stored after the cancel: %s, %v", stored.Doc, err)
	}
}

func TestCancelAndDelete(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	var run map[string]any
	call(t, "POST", h.url+"/runs", matrixRun, &run)
	id := run["id"].(string)
	if code := call(t, "DELETE", h.url+"/runs/"+id, "", nil); code != 409 {
		t.Fatalf("delete queued: %d", code)
	}
	var c map[string]any
	for range 2 { // idempotent
		if code := call(t, "POST", h.url+"/runs/"+id+"/cancel", "", &c); code != 200 || c["status"] != "cancelled" || c["id"] != id {
			t.Fatalf("cancel queued: %d %v", code, c)
		}
	}
	if code := call(t, "DELETE", h.url+"/runs/"+id, "", nil); code != 204 {
		t.Fatalf("delete cancelled: %d", code)
	}
	if code := call(t, "GET", h.url+"/runs/"+id, "", nil); code != 404 {
		t.Fatalf("deleted run: %d", code)
	}

	// A running run: the cancel is recorded, the lease holder carries it out.
	call(t, "POST", h.url+"/runs", matrixRun, &run)
	id = run["id"].(string)
	if _, err := h.runs.Transition(ctx, id, []string{evalrun.StatusQueued}, evalrun.StatusRunning, state.Fence{}, nil); err != nil {
		t.Fatal(err)
	}
	runner := make(chan error, 1)
	go func() { // a runner that notices the request and ends the run
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			r, err := h.runs.Load(ctx, id)
			if err == nil && r.Internal.CancelRequested {
				_, err = h.runs.Transition(ctx, id, []string{evalrun.StatusCancelling}, evalrun.StatusCancelled, state.Fence{}, nil)
				runner <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		runner <- context.DeadlineExceeded
	}()
	if code := call(t, "POST", h.url+"/runs/"+id+"/cancel", "", &c); code != 200 || c["status"] != "cancelled" {
		t.Fatalf("cancel running: %d %v", code, c)
	}
	if err := <-runner; err != nil {
		t.Fatal(err)
	}

	// A finished run cannot be cancelled.
	call(t, "POST", h.url+"/runs", matrixRun, &run)
	id = run["id"].(string)
	for _, to := range []string{evalrun.StatusRunning, evalrun.StatusSucceeded} {
		if _, err := h.runs.Transition(ctx, id, evalrun.Sources(to), to, state.Fence{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if code := call(t, "POST", h.url+"/runs/"+id+"/cancel", "", nil); code != 409 {
		t.Fatalf("cancel succeeded: %d", code)
	}
	if code := call(t, "POST", h.url+"/runs/nope/cancel", "", nil); code != 404 {
		t.Fatalf("cancel unknown: %d", code)
	}
}

func postEvent(t *testing.T, base, id, data string) int {
	t.Helper()
	return postCloudEvent(t, base, data, map[string]string{"Ce-Id": id, "Ce-Source": "/lensfn/user", "Ce-Type": "dev.lensfn.evaluation.run.requested.v1"})
}

// postCloudEvent posts a binary-mode CloudEvent with the header's attributes to the function.
func postCloudEvent(t *testing.T, base, data string, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", strings.TrimSuffix(base, evaluationapi.Prefix)+"/events", strings.NewReader(data))
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestRunRequestedEventCreatesOneRunPerKey(t *testing.T) {
	h := start(t)
	data := `{"idempotency_key":"nightly-2026-12-01","deployment_execution_id":"exec-1","workload":"sanity_random.yaml","accelerator_profile":null}`
	for _, eventID := range []string{"e-1", "e-1", "e-2"} { // a redelivery, then another event with the same key
		if code := postEvent(t, h.url, eventID, data); code/100 != 2 {
			t.Fatalf("event %s: %d", eventID, code)
		}
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	call(t, "GET", h.url+"/runs", "", &list)
	if len(list.Items) != 1 {
		t.Fatalf("%d runs from one key", len(list.Items))
	}
	run := list.Items[0]
	if run["workload"] != "sanity_random.yaml" || run["accelerator_profile"] != nil || run["idempotency_key"] != nil || run["status"] != "queued" {
		t.Fatalf("run %v", run)
	}
	if _, ok := run["accelerator_profile"]; !ok {
		t.Fatal("explicit null dropped on the event path")
	}
	for name, bad := range map[string]string{
		"no key":        `{"deployment_execution_id":"exec-1"}`,
		"invalid body":  `{"idempotency_key":"k2","parallelism":99,"deployment_execution_id":"exec-1"}`,
		"unknown exec":  `{"idempotency_key":"k3","deployment_execution_id":"nope"}`,
		"unknown field": `{"idempotency_key":"k4","deployment_execution_id":"exec-1","x":1}`,
	} {
		if code := postEvent(t, h.url, "bad-"+name, bad); code != 400 {
			t.Errorf("%s: %d, want 400 (never redelivered)", name, code)
		}
	}
	call(t, "GET", h.url+"/runs", "", &list)
	if len(list.Items) != 1 {
		t.Fatalf("bad events created runs: %d", len(list.Items))
	}
}

func postPing(t *testing.T, base, id, at string, ext bool, data string) int {
	t.Helper()
	header := map[string]string{"Ce-Id": id, "Ce-Source": "/apis/v1/namespaces/lensfn/pingsources/nightly-benchmark",
		"Ce-Type": "dev.knative.sources.ping", "Ce-Time": at}
	if ext {
		header["Ce-Lensfnevent"] = "dev.lensfn.evaluation.run.requested.v1"
	}
	return postCloudEvent(t, base, data, header)
}

// A PingSource sends the same data at every firing: each firing creates one run, and a
// redelivered firing none; a ping without the lensfnevent extension is refused for good.
func TestPingSourceFiringsCreateOneRunEach(t *testing.T) {
	h := start(t)
	data := `{"idempotency_key":"nightly","deployment_execution_id":"exec-1","workload":"sanity_random.yaml"}`
	for _, f := range []struct{ id, at string }{
		{"p-1", "2026-12-01T02:00:00.120Z"}, {"p-1", "2026-12-01T02:00:00.120Z"}, // the broker redelivers
		{"p-1b", "2026-12-01T02:00:01Z"},    // the adapter re-sent the same firing with a new id
		{"p-2", "2026-12-02T02:00:00.090Z"}, // the next night
	} {
		if code := postPing(t, h.url, f.id, f.at, true, data); code/100 != 2 {
			t.Fatalf("ping %s: %d", f.id, code)
		}
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	call(t, "GET", h.url+"/runs", "", &list)
	if len(list.Items) != 2 {
		t.Fatalf("%d runs from two firings", len(list.Items))
	}
	for _, run := range list.Items {
		if run["workload"] != "sanity_random.yaml" || run["status"] != "queued" {
			t.Fatalf("run %v", run)
		}
	}
	if code := postPing(t, h.url, "p-3", "2026-12-03T02:00:00Z", false, data); code != 400 {
		t.Fatalf("a ping without lensfnevent: %d, want 400", code)
	}
	call(t, "GET", h.url+"/runs", "", &list)
	if len(list.Items) != 2 {
		t.Fatalf("a ping without lensfnevent created a run: %d runs", len(list.Items))
	}
}

func TestEndpointOutsideThePolicyIsRefused(t *testing.T) {
	h := start(t, "LENS_ENDPOINT_DENY", "127.0.0.0/8")
	var prob map[string]any
	if code := call(t, "POST", h.url+"/runs", `{"deployment_execution_id":"exec-1"}`, &prob); code != 400 || !strings.Contains(toJSON(prob), "policy") {
		t.Fatalf("%d %v", code, prob)
	}
}

func TestRunsResolveInventoryExecutionsAndHoldThem(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	inv := &inventory.Repo{Store: h.deps.Store, Sealer: h.runs.Sealer}
	if err := inv.PutExecution(ctx, inventory.Execution{ID: "exec-inv", ClusterSessionID: "s-1", Name: "vllm", Model: "m-1",
		Endpoint: "http://127.0.0.1:2/v1", Ownership: inventory.OwnershipExistingEndpoint}, "sk-member"); err != nil {
		t.Fatal(err)
	}
	var run map[string]any
	if code := call(t, "POST", h.url+"/runs", `{"deployment_execution_id":"exec-inv"}`, &run); code != 202 {
		t.Fatalf("create: %d %v", code, run)
	}
	id := run["id"].(string)
	if run["model"] != "m-1" || run["cluster_session_id"] != "s-1" || run["endpoint"] != "http://127.0.0.1:2/v1" {
		t.Fatalf("run %v", run)
	}
	stored, _ := h.runs.Load(ctx, id)
	if key, _ := h.runs.APIKey(stored); key != "sk-member" {
		t.Fatalf("the run carries key %q, want the execution's own", key)
	}
	if err := inv.DeleteExecution(ctx, "exec-inv"); problemStatus(err) != 409 {
		t.Fatalf("delete of a used execution: %v", err)
	}
	if code := call(t, "POST", h.url+"/runs/"+id+"/cancel", "", nil); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	if err := inv.DeleteExecution(ctx, "exec-inv"); err != nil {
		t.Fatalf("delete after the run ended: %v", err)
	}
	var prob map[string]any
	if code := call(t, "POST", h.url+"/runs", `{"model_service_group_id":"nope","api_key":"lens-mk-x"}`, &prob); code != 404 {
		t.Fatalf("unknown model service: %d %v", code, prob)
	}
}

func problemStatus(err error) int {
	if err == nil {
		return 0
	}
	return problem.CodeOf(err).Status()
}

func TestArtifactDownload(t *testing.T) {
	h := start(t)
	var run map[string]any
	call(t, "POST", h.url+"/runs", matrixRun, &run)
	id := run["id"].(string)
	if code := call(t, "GET", h.url+"/runs/"+id+"/artifacts/per-request-jsonl", "", nil); code != 404 {
		t.Fatalf("before any record: %d", code)
	}
	if err := os.MkdirAll(h.runs.RunDir(id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.runs.RecordsPath(id), []byte("{\"request_id\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(h.url + "/runs/" + id + "/artifacts/per-request-jsonl")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "{\"request_id\":1}\n" || resp.Header.Get("Content-Type") != "application/x-ndjson" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
	}
	if code := call(t, "GET", h.url+"/runs/"+id+"/artifacts/summary", "", nil); code != 404 {
		t.Fatalf("unknown kind: %d", code)
	}
	get := func(kind string) (*http.Response, string) {
		resp, err := http.Get(h.url + "/runs/" + id + "/artifacts/" + kind)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	resp, csvBody := get("per-request-csv")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), id+"-per-request.csv") ||
		!strings.HasPrefix(csvBody, "request_id,") || !strings.Contains(csvBody, "\n1,") {
		t.Fatalf("csv: %d %q %v", resp.StatusCode, csvBody, resp.Header)
	}
	resp, html := get("report-html")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), id+"-report.html") ||
		!strings.Contains(html, "Benchmark run report: "+id) || !strings.Contains(html, "<svg") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("html: %d %v", resp.StatusCode, resp.Header)
	}
	if strings.Contains(html, "sk-never-shown") {
		t.Fatal("the report shows the run's API key")
	}
}
