package simulationapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/simtask"
)

const endpointKey = "sk-endpoint-key-42"

// openAIModels is a fake endpoint serving /v1/models to the right key.
func openAIModels(t testing.TB, models ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+endpointKey {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var data []string
		for _, m := range models {
			data = append(data, `{"id":"`+m+`","object":"model"}`)
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[` + strings.Join(data, ",") + `]}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// taskHarness has the conversation dataset in place and a sink counting events.
func taskHarness(t testing.TB) (*harness, *eventSink, string) {
	return taskHarnessWith(t, nil)
}

func taskHarnessWith(t testing.TB, env map[string]string) (*harness, *eventSink, string) {
	t.Helper()
	sink := &eventSink{}
	sinkSrv := httptest.NewServer(sink)
	t.Cleanup(sinkSrv.Close)
	all := map[string]string{"K_SINK": sinkSrv.URL}
	for k, v := range env {
		all[k] = v
	}
	h := newHarness(t, all)
	dir := filepath.Join(h.dataDir, "datasets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conversation_trace.jsonl"), []byte(miniTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	return h, sink, openAIModels(t, "Qwen/Qwen3-8B", "other-model")
}

func createBody(endpoint string, extra string) string {
	body := `{"name":"Trace simulation","scenario":"chat","endpoint_mode":"external","endpoint_url":"` + endpoint +
		`","model_name":"Qwen/Qwen3-8B","api_key":"` + endpointKey + `","trace_dataset":"mooncake-conversation"`
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

type created struct {
	TaskID string       `json:"task_id"`
	Status string       `json:"status"`
	Task   simtask.Task `json:"task"`
}

func TestCreateTaskQueuesItAndHidesTheKey(t *testing.T) {
	h, sink, endpoint := taskHarness(t)
	var out created
	req, _ := http.NewRequest(http.MethodPost, h.url+"/api/simulation/tasks", strings.NewReader(createBody(endpoint, "")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw := readAll(t, resp)
	if resp.StatusCode != 202 || strings.Contains(raw, endpointKey) {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	call(t, "GET", h.url+"/api/simulation/tasks/"+mustID(t, raw), "", &out.Task)
	task := out.Task
	if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(task.ID) || task.Status != "queued" || task.ProgressMessage != "Queued" ||
		task.Simulation.DurationSeconds != 60 || task.Simulation.Backend != "trace-replayer" || !task.Simulation.Stream ||
		task.Simulation.GracePeriodSeconds != 30 || task.Prompt.Trace.Format != "mooncake_trace" || !task.Prompt.Trace.FixedSchedule ||
		task.Prompt.Trace.TimeoutSeconds != 3600 || task.Prompt.Trace.SynthesisSpeedupRatio != 1 ||
		task.TaskDir != "artifacts/simulations/"+task.ID || strings.Contains(raw, h.dataDir) || task.CreatedAt == nil {
		t.Fatalf("%+v", task)
	}
	if sink.count() != 1 || sink.ids[0] != task.ID+"/queued" {
		t.Fatalf("queued events %v", sink.ids)
	}
	rec, err := h.server.Deps.Store.Get(context.Background(), simtask.Kind, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.Doc), endpointKey) || !strings.Contains(string(rec.Doc), "api_key_sealed") {
		t.Fatal("the API key is stored in plain text (or not at all)")
	}
	if !strings.Contains(readAll(t, get(t, h.url+"/api/simulation/tasks/"+task.ID)), `"created_at":"`) {
		t.Fatal("no created_at")
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b := new(strings.Builder)
	_, _ = io.Copy(b, resp.Body)
	return b.String()
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func mustID(t *testing.T, raw string) string {
	t.Helper()
	m := regexp.MustCompile(`"task_id":"([0-9a-f]{8})"`).FindStringSubmatch(raw)
	if m == nil {
		t.Fatalf("no task_id in %s", raw)
	}
	return m[1]
}

func TestCreateTaskRejectsBadInput(t *testing.T) {
	h, sink, endpoint := taskHarness(t)
	cases := []struct {
		name, body, detail string
		code               int
	}{
		{"unknown field", createBody(endpoint, `"speed":2`), "extra", 422},
		{"missing model", strings.Replace(createBody(endpoint, ""), `"model_name":"Qwen/Qwen3-8B",`, "", 1), "field required", 422},
		{"zero scale", createBody(endpoint, `"scale_factor":0`), "at least 0.001", 422},
		{"denormal scale", createBody(endpoint, `"scale_factor":5e-324`), "at least 0.001", 422},
		{"tiny scale", createBody(endpoint, `"scale_factor":1e-300`), "at least 0.001", 422},
		{"huge scale", createBody(endpoint, `"scale_factor":1e300`), "at most 1000", 422},
		{"huge duration", createBody(endpoint, `"duration_seconds":1e308`), "at most 604800", 422},
		{"huge timeout", createBody(endpoint, `"trace_timeout_seconds":1e308`), "at most 604800", 422},
		{"huge end", createBody(endpoint, `"trace_end_seconds":1e308`), "at most 1e+09", 422},
		{"900 KB description", createBody(endpoint, `"description":"`+strings.Repeat("d", 900<<10)+`"`), "at most 4000", 422},
		{"deep backend_options", createBody(endpoint, `"backend_options":`+strings.Repeat(`{"a":`, 9000)+`1`+strings.Repeat(`}`, 9000)), "at most 32", 422},
		{"big backend_options", createBody(endpoint, `"backend_options":{"pad":"`+strings.Repeat("p", 20<<10)+`"}`), "16384 bytes", 422},
		{"long model name", strings.Replace(createBody(endpoint, ""), "Qwen/Qwen3-8B", strings.Repeat("m", 600), 1), "at most 512", 422},
		{"negative start", createBody(endpoint, `"trace_start_seconds":-1`), "at least 0", 422},
		{"model not served", strings.Replace(createBody(endpoint, ""), "Qwen/Qwen3-8B", "missing-model", 1), "does not serve", 400},
		{"wrong key", strings.Replace(createBody(endpoint, ""), endpointKey, "wrong", 1), "is unreachable", 400},
		{"unknown model service", createBody(endpoint, `"model_service_group_id":"01998e6b"`), "unknown model service", 404},
		{"unknown dataset", strings.Replace(createBody(endpoint, ""), "mooncake-conversation", "nope", 1), `unknown trace dataset "nope": the known datasets are `, 400},
		{"not downloaded", strings.Replace(createBody(endpoint, ""), "mooncake-conversation", "mooncake-synthetic", 1), "not downloaded", 400},
		{"unknown scenario lists the scenarios", strings.Replace(createBody(endpoint, ""), `"scenario":"chat"`, `"scenario":"gaming"`, 1), "must be one of chat, api-calling, coding", 422},
		{"a wrong type names the JSON kind", createBody(endpoint, `"scale_factor":"fast"`), "expected a number, got a string", 422},
		{"an array body is not an object", `[1,2]`, "expected a JSON object, got an array", 422},
		{"scenario mismatch", strings.Replace(createBody(endpoint, ""), `"scenario":"chat"`, `"scenario":"coding"`, 1), "belongs to scenario", 400},
		{"range past the trace", createBody(endpoint, `"trace_end_seconds":99`), "0 <= start < end <= 4", 400},
		{"empty range", createBody(endpoint, `"trace_start_seconds":2,"trace_end_seconds":1`), "start < end", 400},
		{"unknown backend", createBody(endpoint, `"backend":"locust"`), "unknown backend", 400},
		{"aiperf missing", createBody(endpoint, `"backend":"aiperf"`), "not available", 400},
		{"trace_path elsewhere", createBody(endpoint, `"trace_path":"/etc/passwd"`), "is not the file", 400},
		{"subagent timing", createBody(endpoint, `"backend_options":{"subagent_timing":"whenever"}`), "subagent_timing whenever is not one of spawn_completion, recorded_offsets", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var prob map[string]any
			code := call(t, "POST", h.url+"/api/simulation/tasks", tc.body, &prob)
			if code != tc.code || !strings.Contains(strings.ToLower(anyString(prob["detail"])), strings.ToLower(tc.detail)) {
				t.Fatalf("%d %v", code, prob)
			}
		})
	}
	if sink.count() != 0 {
		t.Fatal("a rejected task was announced")
	}
	var list struct {
		Total int `json:"total"`
	}
	call(t, "GET", h.url+"/api/simulation/tasks", "", &list)
	if list.Total != 0 {
		t.Fatalf("rejected tasks were saved: %d", list.Total)
	}
}

func TestTraceEndSetsTheDuration(t *testing.T) {
	h, _, endpoint := taskHarness(t)
	var out created
	if code := call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, `"trace_start_seconds":0.5,"trace_end_seconds":4,"scale_factor":2`), &out); code != 202 {
		t.Fatal(code)
	}
	// ceil((4 - 0.5) / 2) = 2
	if out.Task.Simulation.DurationSeconds != 2 || *out.Task.Prompt.Trace.EndSeconds != 4 || out.Task.Prompt.Trace.SynthesisSpeedupRatio != 2 {
		t.Fatalf("%+v", out.Task)
	}
}

func TestListStopRerunDelete(t *testing.T) {
	h, sink, endpoint := taskHarness(t)
	var a, b, c created
	call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, ""), &a)
	call(t, "POST", h.url+"/api/simulation/tasks", strings.Replace(createBody(endpoint, ""), `"model_name":"Qwen/Qwen3-8B"`, `"model_name":"other-model"`, 1), &b)
	call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, `"description":"needle in the haystack"`), &c)

	type listing struct {
		Tasks  []simtask.Task      `json:"tasks"`
		Total  int                 `json:"total"`
		Offset int                 `json:"offset"`
		Limit  int                 `json:"limit"`
		Counts map[string]int      `json:"counts"`
		Facets map[string][]string `json:"facets"`
	}
	var l listing
	call(t, "GET", h.url+"/api/simulation/tasks?model=other-model", "", &l)
	if l.Total != 1 || l.Tasks[0].ID != b.TaskID || l.Counts["queued"] != 3 || l.Limit != 10 ||
		strings.Join(l.Facets["models"], ",") != "Qwen/Qwen3-8B,other-model" || len(l.Facets["datasets"]) != 1 {
		t.Fatalf("%+v", l)
	}
	call(t, "GET", h.url+"/api/simulation/tasks?search=NEEDLE", "", &l)
	if l.Total != 1 || l.Tasks[0].ID != c.TaskID {
		t.Fatalf("search: %+v", l)
	}
	call(t, "GET", h.url+"/api/simulation/tasks?limit=2&offset=1", "", &l)
	if l.Total != 3 || len(l.Tasks) != 2 || l.Tasks[0].ID != b.TaskID || l.Tasks[1].ID != a.TaskID {
		t.Fatalf("paging newest first: %+v", l)
	}
	for q, detail := range map[string]string{"limit=0": "limit", "limit=501": "limit", "offset=-1": "offset", "status=sleeping": "status",
		"created_after=yesterday": "created_after", "stauts=running": "stauts", "scenario=gaming": "chat, api-calling, coding",
		"backend=locust": "aiperf, trace-replayer", "trace_format=csv": "bailian_trace, baseten_trace, burst_gpt_trace, mooncake_trace, weka_public_dataset"} {
		var prob map[string]any
		if code := call(t, "GET", h.url+"/api/simulation/tasks?"+q, "", &prob); code != 422 || !strings.Contains(fmt.Sprint(prob["detail"]), detail) {
			t.Errorf("%s: %d %v", q, code, prob["detail"])
		}
	}
	// List items carry "logs": [] as the spec's list example does, never the lines (NOTES.md:
	// lists omit the logs), nor "logs": null.
	if raw := readAll(t, get(t, h.url+"/api/simulation/tasks")); !strings.Contains(raw, `"logs":[]`) || strings.Contains(raw, "Queued for") ||
		!strings.Contains(raw, `"logs_truncated"`) {
		t.Fatalf("list items: %s", raw)
	}

	// Stop a queued task: it answers cancelling and is stored cancelled.
	var stop map[string]string
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+a.TaskID+"/stop", "", &stop); code != 200 || stop["status"] != "cancelling" {
		t.Fatalf("%d %v", code, stop)
	}
	var got simtask.Task
	call(t, "GET", h.url+"/api/simulation/tasks/"+a.TaskID, "", &got)
	if got.Status != "cancelled" || got.CompletedAt == nil || len(got.Logs) < 2 {
		t.Fatalf("%+v", got)
	}
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+a.TaskID+"/stop", "", nil); code != 409 {
		t.Fatalf("stopping twice: %d", code)
	}
	call(t, "GET", h.url+"/api/simulation/tasks?status=cancelled,queued", "", &l)
	if l.Total != 3 || l.Counts["cancelled"] != 1 || l.Counts["queued"] != 2 {
		t.Fatalf("%+v", l.Counts)
	}

	// Rerun onto another endpoint: a new queued task named after the old one.
	other := openAIModels(t, "Qwen/Qwen3-8B")
	var re created
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+a.TaskID+"/rerun", `{"endpoint_url":"`+other+`","api_key":"`+endpointKey+`"}`, &re); code != 202 {
		t.Fatal(code)
	}
	if re.TaskID == a.TaskID || re.Task.Name != "Trace simulation · rerun of "+a.TaskID || re.Task.EndpointURL != other ||
		re.Task.Status != "queued" || re.Task.Simulation.Backend != "trace-replayer" {
		t.Fatalf("%+v", re.Task)
	}
	// A rerun of the rerun keeps the first name and names the task it reruns.
	var again created
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+re.TaskID+"/rerun", `{"api_key":"`+endpointKey+`"}`, &again); code != 202 ||
		again.Task.Name != "Trace simulation · rerun of "+re.TaskID {
		t.Fatalf("rerun of a rerun: %d %q", code, again.Task.Name)
	}
	if code := call(t, "POST", h.url+"/api/simulation/tasks/"+a.TaskID+"/rerun", `{"bogus":1}`, nil); code != 422 {
		t.Fatalf("rerun with unknown field: %d", code)
	}
	if sink.count() != 5 {
		t.Fatalf("%d queued events", sink.count())
	}

	// Delete: refused while active, then the record and its folder go.
	if code := call(t, "DELETE", h.url+"/api/simulation/tasks/"+b.TaskID, "", nil); code != 409 {
		t.Fatalf("deleting a queued task: %d", code)
	}
	if err := os.MkdirAll(filepath.Join(h.dataDir, "artifacts", "simulations", a.TaskID), 0o755); err != nil {
		t.Fatal(err)
	}
	var del map[string]string
	if code := call(t, "DELETE", h.url+"/api/simulation/tasks/"+a.TaskID, "", &del); code != 200 || del["status"] != "deleted" {
		t.Fatalf("%d %v", code, del)
	}
	if _, err := os.Stat(filepath.Join(h.dataDir, "artifacts", "simulations", a.TaskID)); !os.IsNotExist(err) {
		t.Fatal("the task folder was left behind")
	}
	for _, path := range []string{"/api/simulation/tasks/" + a.TaskID, "/api/simulation/tasks/zzzzzzzz", "/api/simulation/tasks/" + b.TaskID + "/artifacts/summary-json"} {
		if code := call(t, "GET", h.url+path, "", nil); code != 404 {
			t.Errorf("%s: %d", path, code)
		}
	}
	var issues map[string]any
	if code := call(t, "GET", h.url+"/api/simulation/tasks/"+b.TaskID+"/response-code-issues?status_code=500", "", &issues); code != 200 ||
		issues["total"].(float64) != 0 || issues["task_id"] != b.TaskID || issues["limit"].(float64) != 100 {
		t.Fatalf("%d %v", code, issues)
	}
	for _, q := range []string{"", "?status_code=abc", "?status_code=500&limit=501"} {
		if code := call(t, "GET", h.url+"/api/simulation/tasks/"+b.TaskID+"/response-code-issues"+q, "", nil); code != 422 {
			t.Errorf("issues%s: %d", q, code)
		}
	}
}

// A duration derived from the trace range and the scale factor is bounded like a given one: a
// 700 s range at scale factor 0.001 would last 700,000 s, more than the week allowed, so the task
// is refused at create (a 400 that says what to change), never stored or announced.
func TestDerivedDurationOverAWeekIsRefused(t *testing.T) {
	h, sink, endpoint := taskHarness(t)
	path := filepath.Join(h.dataDir, "datasets", "conversation_trace.jsonl")
	if err := os.WriteFile(path, []byte("0 a\n350000 b\n700000 c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var prob map[string]any
	code := call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, `"trace_start_seconds":0,"trace_end_seconds":700,"scale_factor":0.001`), &prob)
	detail := anyString(prob["detail"])
	if code != 400 || !strings.Contains(detail, "lasts 700000 seconds; at most 604800 are allowed") || !strings.Contains(detail, "raise scale_factor or shorten the range") {
		t.Fatalf("%d %v", code, prob)
	}
	// The same range at a scale that fits the week is accepted.
	var out created
	if code := call(t, "POST", h.url+"/api/simulation/tasks", createBody(endpoint, `"trace_start_seconds":0,"trace_end_seconds":700,"scale_factor":0.002`), &out); code != 202 ||
		out.Task.Simulation.DurationSeconds != 350000 {
		t.Fatalf("%d %+v", code, out.Task.Simulation)
	}
	if sink.count() != 1 {
		t.Fatalf("%d tasks announced, want only the accepted one", sink.count())
	}
}
