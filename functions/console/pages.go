package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/report"
	"github.com/lensfn/lensfn/runtime/sse"
)

// API prefixes the console calls.
const (
	simAPI  = "/api/simulation"
	evalAPI = "/api/v1/evaluate"
)

type obj = map[string]any

// section is one part of a page whose API call may fail on its own.
type section struct {
	Items   []any
	Total   any
	Problem *apiError
}

func (c *Console) list(ctx context.Context, q *request, path, key string) section {
	var out obj
	if err := c.api.call(ctx, q.token(), http.MethodGet, path, nil, &out); err != nil {
		e, _ := asAPIError(err)
		return section{Problem: e}
	}
	items, _ := out[key].([]any)
	return section{Items: items, Total: out["total"]}
}

func (c *Console) home(w http.ResponseWriter, r *http.Request, q *request) error {
	data := map[string]section{
		"tasks":    c.list(r.Context(), q, simAPI+"/tasks?limit=10", "tasks"),
		"datasets": c.list(r.Context(), q, simAPI+"/trace-datasets", "datasets"),
		"backends": c.list(r.Context(), q, simAPI+"/backends", "backends"),
		"runs":     c.list(r.Context(), q, evalAPI+"/runs", "items"),
		"evals":    c.list(r.Context(), q, evalAPI+"/workflow-runs", "items"),
	}
	c.render(w, http.StatusOK, q, "home", view{Title: "Overview", Nav: "home", Data: obj{"sections": data,
		"recentRuns": recentRuns(data["runs"].Items), "recentEvals": recentEvaluations(data["evals"].Items)}})
	return nil
}

// recentShown is how many runs and evaluations the overview lists.
const recentShown = 8

// newestFirst orders records by created_at, newest first, and keeps the first recentShown.
func newestFirst(items []any) []any {
	out := append([]any(nil), items...)
	sort.SliceStable(out, func(i, j int) bool { return str(get(out[i], "created_at")) > str(get(out[j], "created_at")) })
	return out[:min(len(out), recentShown)]
}

// recentRun is a run in the overview: its verdict and headline numbers.
type recentRun struct {
	ID, Status, Model, SLA, Throughput, TTFT, Created string
}

func recentRuns(items []any) []recentRun {
	var out []recentRun
	for _, it := range newestFirst(items) {
		out = append(out, recentRun{ID: str(get(it, "id")), Status: str(get(it, "status")), Model: str(get(it, "model")),
			SLA: readSLA(get(it, "sla")).Verdict, Throughput: withUnit(get(it, "metrics.throughput_tps"), "tok/s"),
			TTFT: withUnit(get(it, "metrics.ttft_ms"), "ms"), Created: str(get(it, "created_at"))})
	}
	return out
}

// recentEvaluation is an evaluation in the overview: its cases and its guides' SLA verdict
// (missed when any guide case missed, met when every checked one met).
type recentEvaluation struct {
	ID, Name, Status, SLA, Cases, Created string
}

func recentEvaluations(items []any) []recentEvaluation {
	var out []recentEvaluation
	for _, it := range newestFirst(items) {
		e := recentEvaluation{ID: str(get(it, "id")), Name: str(get(it, "name")), Status: str(get(it, "status")), Created: str(get(it, "created_at"))}
		cases, _ := get(it, "cases").([]any)
		done := 0
		for _, cs := range cases {
			if terminal(str(get(cs, "status"))) {
				done++
			}
			if str(get(cs, "kind")) != "guide" {
				continue
			}
			switch readSLA(get(cs, "sla")).Verdict {
			case "missed":
				e.SLA = "missed"
			case "met":
				if e.SLA == "" {
					e.SLA = "met"
				}
			}
		}
		e.Cases = fmt.Sprintf("%d of %d finished", done, len(cases))
		out = append(out, e)
	}
	return out
}

// --- sign-in ---

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request, q *request) error {
	c.render(w, http.StatusOK, q, "login", view{Title: "Sign in", Nav: "login", Data: obj{"next": localPath(r.URL.Query().Get("next"))}})
	return nil
}

func (c *Console) login(w http.ResponseWriter, r *http.Request, q *request) error {
	next := localPath(r.PostForm.Get("next"))
	token := strings.TrimSpace(r.PostForm.Get("token"))
	again := func(status int, msg string) error {
		c.render(w, http.StatusOK, q, "login", view{Title: "Sign in", Nav: "login", Data: obj{"next": next},
			Problem: &apiError{Status: status, Title: "Not signed in", Detail: msg}})
		return nil
	}
	if !c.authOn {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	if token == "" {
		return again(http.StatusUnprocessableEntity, "enter an API token (lensfn-local token create prints one)")
	}
	if _, err := c.deps.Tokens.Verify(r.Context(), token); err != nil {
		if errors.Is(err, auth.ErrInvalid) {
			c.logins.WithLabelValues("invalid").Inc()
			return again(http.StatusUnauthorized, "the token is not valid (unknown, revoked or malformed)")
		}
		c.logins.WithLabelValues("unavailable").Inc()
		return again(http.StatusServiceUnavailable, "the token store is unavailable; try again shortly")
	}
	c.logins.WithLabelValues("ok").Inc()
	// A fresh session id and CSRF token at sign-in: a session planted before cannot be reused.
	sess := newSession(time.Now())
	sess.Token = token
	c.sessions.write(w, sess)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, _ *request) error {
	c.sessions.clear(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// --- datasets ---

// listPage renders one API list (its items under key) on a page of its own.
func (c *Console) listPage(page, title, apiPath, key string) handler {
	return func(w http.ResponseWriter, r *http.Request, q *request) error {
		c.render(w, http.StatusOK, q, page, view{Title: title, Nav: page, Data: c.list(r.Context(), q, apiPath, key)})
		return nil
	}
}

func (c *Console) dataset(w http.ResponseWriter, r *http.Request, q *request) error {
	name := r.PathValue("name")
	bins := r.URL.Query().Get("bins")
	if bins == "" {
		bins = "100"
	}
	var tl struct {
		Dataset         string  `json:"dataset"`
		TraceFormat     string  `json:"trace_format"`
		RequestCount    int64   `json:"request_count"`
		DurationSeconds float64 `json:"duration_seconds"`
		BinWidthSeconds float64 `json:"bin_width_seconds"`
		Bins            []struct {
			Start float64 `json:"start_seconds"`
			Count float64 `json:"request_count"`
		} `json:"bins"`
	}
	path := simAPI + "/trace-datasets/" + url.PathEscape(name) + "/timeline?bins=" + url.QueryEscape(bins)
	data := obj{"name": name}
	if err := c.api.call(r.Context(), q.token(), http.MethodGet, path, nil, &tl); err != nil {
		e, _ := asAPIError(err)
		c.render(w, http.StatusOK, q, "dataset", view{Title: name, Nav: "datasets", Data: data, Problem: e})
		return nil
	}
	s := report.Series{Name: "requests per bin"}
	for _, b := range tl.Bins {
		s.X, s.Y = append(s.X, b.Start), append(s.Y, b.Count)
	}
	chart := report.LineChart{Title: "Requests over the trace", XLabel: "seconds", YLabel: fmt.Sprintf("requests per %s s", report.Num(tl.BinWidthSeconds)),
		Series: []report.Series{s}, Step: true}
	data["timeline"], data["chart"] = tl, chart.SVG()
	c.render(w, http.StatusOK, q, "dataset", view{Title: name, Nav: "datasets", Data: data})
	return nil
}

func (c *Console) downloadDataset(w http.ResponseWriter, r *http.Request, q *request) error {
	name := r.PathValue("name")
	var res obj
	if err := c.api.call(r.Context(), q.token(), http.MethodPost, simAPI+"/trace-datasets/download", obj{"dataset": name}, &res); err != nil {
		e, _ := asAPIError(err)
		data := c.list(r.Context(), q, simAPI+"/trace-datasets", "datasets")
		c.render(w, http.StatusOK, q, "datasets", view{Title: "Trace datasets", Nav: "datasets", Data: data, Problem: e})
		return nil
	}
	http.Redirect(w, r, "/datasets/"+url.PathEscape(name), http.StatusSeeOther)
	return nil
}

// --- simulation tasks ---

func (c *Console) tasks(w http.ResponseWriter, r *http.Request, q *request) error {
	path := simAPI + "/tasks?limit=100"
	if s := r.URL.Query().Get("status"); s != "" {
		path += "&status=" + url.QueryEscape(s)
	}
	c.render(w, http.StatusOK, q, "tasks", view{Title: "Simulation tasks", Nav: "tasks", Data: c.list(r.Context(), q, path, "tasks")})
	return nil
}

// A form shown again with the API's errors answers 200: the page is what the browser asked
// for and the problem is on it (a 4xx document is a failed load in the browser's console).

// taskFields are the create form's fields, kept to show the form again with the API's errors.
var taskFields = []string{"name", "scenario", "endpoint_url", "model_name", "trace_dataset", "scale_factor", "duration_seconds"}

var numericTaskFields = map[string]bool{"scale_factor": true, "duration_seconds": true}

func (c *Console) taskFormData(ctx context.Context, q *request, values map[string]string) obj {
	return obj{"values": values, "scenarios": c.list(ctx, q, simAPI+"/scenarios", "scenarios"),
		"datasets": c.list(ctx, q, simAPI+"/trace-datasets", "datasets"), "errors": map[string]string{}}
}

func (c *Console) newTask(w http.ResponseWriter, r *http.Request, q *request) error {
	values := map[string]string{"scenario": "chat", "trace_dataset": r.URL.Query().Get("dataset"), "scale_factor": "1"}
	c.render(w, http.StatusOK, q, "task_new", view{Title: "New simulation task", Nav: "tasks", Data: c.taskFormData(r.Context(), q, values)})
	return nil
}

func (c *Console) createTask(w http.ResponseWriter, r *http.Request, q *request) error {
	values := map[string]string{}
	body := obj{}
	for _, f := range taskFields {
		v := strings.TrimSpace(r.PostForm.Get(f))
		values[f] = v
		if v == "" {
			continue
		}
		body[f] = v
		// A number the user typed goes as a number; anything else goes as typed, so the API's
		// own validation names the field.
		if n, err := strconv.ParseFloat(v, 64); err == nil && numericTaskFields[f] {
			body[f] = n
		}
	}
	var created struct {
		TaskID string `json:"task_id"`
	}
	err := c.api.call(r.Context(), q.token(), http.MethodPost, simAPI+"/tasks", body, &created)
	if err != nil {
		e, _ := asAPIError(err)
		data := c.taskFormData(r.Context(), q, values)
		errs := data["errors"].(map[string]string)
		for _, f := range e.Fields {
			errs[f.Field()] = f.Message
		}
		c.render(w, http.StatusOK, q, "task_new", view{Title: "New simulation task", Nav: "tasks", Data: data, Problem: e})
		return nil
	}
	http.Redirect(w, r, "/tasks/"+url.PathEscape(created.TaskID), http.StatusSeeOther)
	return nil
}

func (c *Console) task(w http.ResponseWriter, r *http.Request, q *request) error {
	id := r.PathValue("id")
	var t obj
	if err := c.api.call(r.Context(), q.token(), http.MethodGet, simAPI+"/tasks/"+url.PathEscape(id), nil, &t); err != nil {
		return err
	}
	data := obj{"task": t, "id": id, "summary": flatten(get(t, "result.summary"))}
	hasReport := false
	if arts, ok := get(t, "result.artifacts").([]any); ok {
		for _, a := range arts {
			if str(get(a, "kind")) == "report-html" {
				hasReport = true
			}
		}
	}
	data["report"] = hasReport
	c.render(w, http.StatusOK, q, "task", view{Title: "Task " + id, Nav: "tasks", Data: data})
	return nil
}

// taskEvents relays the task's event stream: a browser's EventSource cannot send the token.
func (c *Console) taskEvents(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.relayEvents(w, r, q, simAPI+"/tasks/"+url.PathEscape(r.PathValue("id"))+"/events")
}

// runEvents relays a benchmark run's event stream (status, phase, progress, live metrics).
func (c *Console) runEvents(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.relayEvents(w, r, q, evalAPI+"/runs/"+url.PathEscape(r.PathValue("id"))+"/events")
}

// relayEvents relays an API's event stream to the page, resuming with the browser's
// Last-Event-ID.
func (c *Console) relayEvents(w http.ResponseWriter, r *http.Request, q *request, apiPath string) error {
	select {
	case c.watchers <- struct{}{}:
		defer func() { <-c.watchers }()
	default:
		http.Error(w, "too many live views are open on this console instance", http.StatusTooManyRequests)
		return nil
	}
	header := http.Header{}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		header.Set("Last-Event-ID", id)
	}
	header.Set("Accept", "text/event-stream")
	resp, err := c.api.send(r.Context(), c.api.stream, q.token(), http.MethodGet, apiPath, nil, header)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e := problemOf(resp.StatusCode, raw)
		http.Error(w, e.Error(), e.Status)
		return nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	// Each event is re-written whole, so only well-formed events reach the page.
	err = sse.Read(resp.Body, func(m sse.Message) error {
		var b strings.Builder
		if m.ID != "" {
			b.WriteString("id: " + m.ID + "\n")
		}
		if m.Type != "" {
			b.WriteString("event: " + m.Type + "\n")
		}
		for _, line := range strings.Split(m.Data, "\n") {
			b.WriteString("data: " + line + "\n")
		}
		b.WriteString("\n")
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil && r.Context().Err() == nil {
		c.deps.Log.Infow("event relay ended", "path", apiPath, "error", err)
	}
	return nil
}

// taskReport relays the task's self-contained HTML report.
func (c *Console) taskReport(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.relayReport(w, r, q, simAPI+"/tasks/"+url.PathEscape(r.PathValue("id"))+"/artifacts/report-html")
}

// evaluationReport relays an evaluation's comparison report.
func (c *Console) evaluationReport(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.relayReport(w, r, q, evalAPI+"/workflow-runs/"+url.PathEscape(r.PathValue("id"))+"/artifacts/report-html")
}

// relayReport relays a self-contained HTML report, sandboxed: it runs no script and loads
// nothing, so a report cannot act as the console.
func (c *Console) relayReport(w http.ResponseWriter, r *http.Request, q *request, apiPath string) error {
	resp, err := c.api.send(r.Context(), c.api.stream, q.token(), http.MethodGet, apiPath, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return problemOf(resp.StatusCode, raw)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'")
	w.Header().Set("X-Frame-Options", "SAMEORIGIN")
	_, err = io.Copy(w, resp.Body)
	return err
}

func (c *Console) taskAction(action string) handler {
	return func(w http.ResponseWriter, r *http.Request, q *request) error {
		id := url.PathEscape(r.PathValue("id"))
		method, path := http.MethodPost, simAPI+"/tasks/"+id+"/"+action
		if action == "delete" {
			method, path = http.MethodDelete, simAPI+"/tasks/"+id
		}
		var res obj
		if err := c.api.call(r.Context(), q.token(), method, path, nil, &res); err != nil {
			return err
		}
		switch action {
		case "delete":
			http.Redirect(w, r, "/tasks", http.StatusSeeOther)
		case "rerun":
			http.Redirect(w, r, "/tasks/"+url.PathEscape(str(res["task_id"])), http.StatusSeeOther)
		default:
			http.Redirect(w, r, "/tasks/"+id, http.StatusSeeOther)
		}
		return nil
	}
}

// compareRow is one summary number of two tasks.
type compareRow struct {
	Metric string
	A, B   any
	Ratio  string
}

func (c *Console) compare(w http.ResponseWriter, r *http.Request, q *request) error {
	a, b := r.URL.Query().Get("a"), r.URL.Query().Get("b")
	data := obj{"a": a, "b": b, "tasks": c.list(r.Context(), q, simAPI+"/tasks?limit=100", "tasks")}
	if a == "" || b == "" {
		c.render(w, http.StatusOK, q, "compare", view{Title: "Compare tasks", Nav: "tasks", Data: data})
		return nil
	}
	var ta, tb obj
	if err := c.api.call(r.Context(), q.token(), http.MethodGet, simAPI+"/tasks/"+url.PathEscape(a), nil, &ta); err != nil {
		return err
	}
	if err := c.api.call(r.Context(), q.token(), http.MethodGet, simAPI+"/tasks/"+url.PathEscape(b), nil, &tb); err != nil {
		return err
	}
	fa, fb := flatten(get(ta, "result.summary")), flatten(get(tb, "result.summary"))
	var rows []compareRow
	var labels []string
	var values []float64
	for _, kv := range fa {
		row := compareRow{Metric: kv.Key, A: kv.Value}
		for _, kv2 := range fb {
			if kv2.Key == kv.Key {
				row.B = kv2.Value
			}
		}
		x, okA := kv.Value.(float64)
		y, okB := row.B.(float64)
		if okA && okB && x != 0 {
			row.Ratio = report.Num(y/x) + "×"
			if (strings.HasPrefix(kv.Key, "ttft.") || strings.HasPrefix(kv.Key, "tpot.") || strings.HasPrefix(kv.Key, "latency.")) &&
				(strings.HasSuffix(kv.Key, "p50_ms") || strings.HasSuffix(kv.Key, "p99_ms")) {
				labels, values = append(labels, kv.Key), append(values, y/x)
			}
		}
		rows = append(rows, row)
	}
	data["rows"], data["taskA"], data["taskB"] = rows, ta, tb
	if len(labels) > 0 {
		data["chart"] = report.BarChart{Title: "B / A for the percentiles (1 = equal)", YLabel: "ratio", Labels: labels, Values: values}.SVG()
	}
	c.render(w, http.StatusOK, q, "compare", view{Title: "Compare tasks", Nav: "tasks", Data: data})
	return nil
}

// --- benchmark runs ---

// exampleRun is the form's starting point: the spec's example, to be pointed at a deployment.
const exampleRun = `{
  "deployment_execution_id": "",
  "harness": "inference-perf",
  "workload": "sanity_random.yaml",
  "matrix": [{"isl": 128, "osl": 32}],
  "concurrency_stages": [{"concurrency": 2, "num_requests": 8}],
  "warmup_requests": 1,
  "sla_targets": {"ttft_ms": 500, "ttft_percentile": "p99", "success_rate_min_percent": 99}
}`

// evaluationTemplate is the new-evaluation form's starting point: a request the evaluation API
// accepts as it stands once the stack has a cluster session and a guide configuration, which
// the form fills in (the newest guide configuration, the first cluster's active session): one
// plan comparing the configuration with a direct-vllm baseline on a short shared-prefix
// workload, with SLA targets. The keys are in the order the API documents them.
type evaluationTemplate struct {
	Name             string         `json:"name"`
	ClusterSessionID string         `json:"cluster_session_id"`
	BenchmarkPlans   []templatePlan `json:"benchmark_plans"`
}

type templatePlan struct {
	ID                      string         `json:"id"`
	ConfigurationArtifactID string         `json:"configuration_artifact_id"`
	BaselineTypes           []string       `json:"baseline_types"`
	Benchmark               map[string]any `json:"benchmark"`
	SLATargets              map[string]any `json:"sla_targets"`
}

// newEvaluationSpec is the template filled in from the inventory's clusters and configurations
// (either list may be unavailable or empty: the field is then left for the user, and the form
// says what it needs).
func newEvaluationSpec(clusters, configurations section) string {
	t := evaluationTemplate{Name: "comparison", BenchmarkPlans: []templatePlan{{ID: "plan-1", BaselineTypes: []string{"direct-vllm"},
		Benchmark: map[string]any{"shared_prefix": map[string]any{"num_groups": 2, "num_prompts_per_group": 5, "system_prompt_len": 64,
			"question_len": 16, "output_len": 8, "stages": []any{map[string]any{"rate": 4, "duration": 3}}}},
		SLATargets: map[string]any{"ttft_ms": 2000, "ttft_percentile": "p99", "success_rate_min_percent": 99}}}}
	for _, c := range clusters.Items {
		if id := str(get(c, "sessionId")); id != "" {
			t.ClusterSessionID = id
			break
		}
	}
	newest := ""
	for _, c := range configurations.Items {
		if at := str(get(c, "created_at")); at >= newest && str(get(c, "id")) != "" {
			newest, t.BenchmarkPlans[0].ConfigurationArtifactID = at, str(get(c, "id"))
		}
	}
	raw, _ := json.MarshalIndent(t, "", "  ")
	return string(raw)
}

func (c *Console) newRun(w http.ResponseWriter, r *http.Request, q *request) error {
	execs := c.list(r.Context(), q, "/api/v1/deployments/executions", "items")
	c.render(w, http.StatusOK, q, "spec_new", view{Title: "New benchmark run", Nav: "runs",
		Data: obj{"action": "/runs", "spec": exampleRun, "what": "benchmark run", "executions": execs}})
	return nil
}

func (c *Console) newEvaluation(w http.ResponseWriter, r *http.Request, q *request) error {
	clusters := c.list(r.Context(), q, "/api/cluster/clusters?limit=100", "items")
	configurations := c.list(r.Context(), q, "/api/v1/configurations?type=guide&limit=500", "items")
	c.render(w, http.StatusOK, q, "spec_new", view{Title: "New evaluation", Nav: "evaluations",
		Data: obj{"action": "/evaluations", "spec": newEvaluationSpec(clusters, configurations), "what": "evaluation",
			"clusters": clusters, "configurations": configurations}})
	return nil
}

// createFromSpec posts the form's JSON spec to an API and redirects to the created record.
func (c *Console) createFromSpec(w http.ResponseWriter, r *http.Request, q *request, apiPath, what, nav, pagePrefix string) error {
	spec := r.PostForm.Get("spec")
	again := func(e *apiError) error {
		c.render(w, http.StatusOK, q, "spec_new", view{Title: "New " + what, Nav: nav, Problem: e,
			Data: obj{"action": pagePrefix, "spec": spec, "what": what}})
		return nil
	}
	var body any
	dec := json.NewDecoder(strings.NewReader(spec))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return again(&apiError{Status: http.StatusUnprocessableEntity, Title: "Not JSON", Detail: "the specification is not a JSON object: " + err.Error()})
	}
	if _, ok := body.(map[string]any); !ok {
		return again(&apiError{Status: http.StatusUnprocessableEntity, Title: "Not JSON", Detail: "the specification must be a JSON object"})
	}
	var created obj
	if err := c.api.call(r.Context(), q.token(), http.MethodPost, apiPath, body, &created); err != nil {
		e, _ := asAPIError(err)
		return again(e)
	}
	http.Redirect(w, r, pagePrefix+"/"+url.PathEscape(str(created["id"])), http.StatusSeeOther)
	return nil
}

func (c *Console) createRun(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.createFromSpec(w, r, q, evalAPI+"/runs", "benchmark run", "runs", "/runs")
}

func (c *Console) createEvaluation(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.createFromSpec(w, r, q, evalAPI+"/evaluations", "evaluation", "evaluations", "/evaluations")
}

// terminal says whether a run, task or workflow status is final (the page stops refreshing).
func terminal(status string) bool {
	switch status {
	case "succeeded", "completed", "failed", "cancelled", "canceled", "stopped", "deleted":
		return true
	}
	return false
}

func (c *Console) run(w http.ResponseWriter, r *http.Request, q *request) error {
	id := r.PathValue("id")
	var run obj
	if err := c.api.call(r.Context(), q.token(), http.MethodGet, evalAPI+"/runs/"+url.PathEscape(id), nil, &run); err != nil {
		return err
	}
	// A running run is followed live over its event stream ("watch"; the page refreshes itself
	// only without JavaScript).
	final := terminal(str(run["status"]))
	data := obj{"run": run, "id": id, "watch": !final, "live_metrics": run["live_metrics"], "final": final,
		"sla": readSLA(run["sla"]), "tiles": readTiles(run["metrics"]), "percentiles": readPercentiles(run["metrics"]),
		"charts": percentileCharts(run["metrics"]), "report": hasArtifact(run, "report-html"), "workload": workloadSummary(run),
		"raw": rawJSON(run)}
	data["stages"], data["stageCharts"] = readStages(run)
	c.render(w, http.StatusOK, q, "run", view{Title: "Benchmark run " + id, Nav: "runs", Data: data})
	return nil
}

// runReport relays a benchmark run's self-contained HTML report.
func (c *Console) runReport(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.relayReport(w, r, q, evalAPI+"/runs/"+url.PathEscape(r.PathValue("id"))+"/artifacts/report-html")
}

func (c *Console) runAction(action string) handler {
	return func(w http.ResponseWriter, r *http.Request, q *request) error {
		id := url.PathEscape(r.PathValue("id"))
		method, path, next := http.MethodPost, evalAPI+"/runs/"+id+"/cancel", "/runs/"+id
		if action == "delete" {
			method, path, next = http.MethodDelete, evalAPI+"/runs/"+id, "/runs"
		}
		if err := c.api.call(r.Context(), q.token(), method, path, nil, nil); err != nil {
			return err
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
}

// --- evaluations (workflow runs) ---

func (c *Console) evaluation(w http.ResponseWriter, r *http.Request, q *request) error {
	return c.showEvaluation(w, r, q, r.PathValue("id"), nil)
}

// showEvaluation renders an evaluation's details; failed, when not nil, is an action's problem
// shown above them.
func (c *Console) showEvaluation(w http.ResponseWriter, r *http.Request, q *request, id string, failed *apiError) error {
	var details obj
	if err := c.api.call(r.Context(), q.token(), http.MethodGet, evalAPI+"/workflow-runs/"+url.PathEscape(id)+"/details", nil, &details); err != nil {
		e, _ := asAPIError(err)
		if e.NotFound() {
			c.render(w, http.StatusNotFound, q, "evaluation", view{Title: "Evaluation " + id, Nav: "evaluations", Problem: e, Data: obj{"id": id, "missing": true}})
			return nil
		}
		return err
	}
	status := str(get(details, "workflow.status"))
	data := obj{"id": id, "details": details, "live": !terminal(status),
		"retryable": status == "failed" || status == "cancelled", "hasReport": get(details, "report") != nil}
	if rep, ok := get(details, "report").(map[string]any); ok {
		data["comparisons"] = comparisonViews(rep)
		data["topology"] = topologyViews(rep)
	}
	if failed != nil {
		// The action's problem is the page's: no refresh may take it away before it is read.
		data["live"] = false
	}
	c.render(w, http.StatusOK, q, "evaluation", view{Title: "Evaluation " + id, Nav: "evaluations", Data: data, Problem: failed})
	return nil
}

// evaluationAction cancels, retries or deletes an evaluation, or cancels one of its cases,
// through the evaluation API, which decides what is allowed: its problem (a 409 for a case
// already finished, a workflow that cannot be retried) is shown on the evaluation's page.
func (c *Console) evaluationAction(action string) handler {
	return func(w http.ResponseWriter, r *http.Request, q *request) error {
		id := r.PathValue("id")
		base := evalAPI + "/workflow-runs/" + url.PathEscape(id)
		method, path, next := http.MethodPost, base+"/"+action, "/evaluations/"+url.PathEscape(id)
		switch action {
		case "delete":
			method, path, next = http.MethodDelete, base, "/evaluations"
		case "cancel-case":
			path = base + "/cases/" + url.PathEscape(r.PathValue("case")) + "/cancel"
		}
		if err := c.api.call(r.Context(), q.token(), method, path, nil, nil); err != nil {
			e, ok := asAPIError(err)
			if !ok {
				return err
			}
			return c.showEvaluation(w, r, q, id, e)
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
}

// comparisonView is one comparison of the v2 report: a guide case against a baseline.
type comparisonView struct {
	Label string
	SLA   string // met, missed, or "" without targets
	// SLAChecks are the guide's SLA checks with their margins.
	SLAChecks slaView
	Parity    string // valid, or what differs (each reason with both values); "" without a baseline
	// ParityValid and ParityReasons say the same for the page's parity block; Accelerators are
	// both sides' counts ("1 vs 1").
	ParityValid   bool
	ParityReasons []string
	Accelerators  string
	Rows          []kv // geometric means of the ratios (guide / baseline), matrix then rate stages
	// Stages are the matched stages with both sides' absolute numbers beside each ratio.
	Stages      []matchedStage
	StageTitles []string
	Chart       template.HTML
	// Repetitions says how many repetitions each side's intervals come from, and how.
	Repetitions string
	// Level is the intervals' confidence level ("95 %").
	Level string
	// Changes are the significance's metrics: the change with its interval and verdict;
	// ChangeChart draws them with error bars, changes inside their noise pale.
	Changes     []changeView
	ChangeChart template.HTML
}

// changeView is one metric's change versus the baseline, with both sides' absolute estimates
// and the ratio's interval.
type changeView struct {
	Metric, Label, Guide, Baseline, Ratio, RatioInterval, Change, Interval, Verdict string
}

// matchedStage is one matched pair of stages: per statistics metric the guide's and the
// baseline's means and their ratio.
type matchedStage struct {
	Label string
	Cells []stageCell
}

type stageCell struct{ Guide, Baseline, Ratio string }

// stageMetrics are the statistics' metrics (comparison's statistics order) with their labels.
var stageMetrics = []struct{ key, label string }{
	{"throughput_tps", "output tok/s"}, {"ttft_ms", "TTFT ms"}, {"tpot_ms", "TPOT ms"}, {"request_latency_ms", "latency ms"},
}

// metricLabels name the significance's metrics with their units.
var metricLabels = map[string]string{
	"throughput_tps": "Output throughput (tok/s)", "input_throughput_tps": "Input throughput (tok/s)", "throughput_rps": "Requests (req/s)",
	"ttft_ms": "TTFT p50 (ms)", "itl_ms": "ITL p50 (ms)", "tpot_ms": "TPOT p50 (ms)", "request_latency_ms": "Latency p50 (ms)", "error_rate": "Error rate",
}

// matchedStages reads a statistics block's rows (at most maxStageRows).
func matchedStages(stats any, rate bool) []matchedStage {
	rows, _ := get(stats, "rows").([]any)
	var out []matchedStage
	for i, r := range rows {
		if i >= maxStageRows {
			break
		}
		st := matchedStage{Label: stageLabel(r, rate)}
		for _, m := range stageMetrics {
			cell := stageCell{Guide: num(get(r, "guide."+m.key)), Baseline: num(get(r, "baseline."+m.key)), Ratio: num(get(r, "ratio."+m.key))}
			for _, c := range []*string{&cell.Guide, &cell.Baseline, &cell.Ratio} {
				if *c == "" {
					*c = "–"
				}
			}
			if cell.Ratio != "–" {
				cell.Ratio += "×"
			}
			st.Cells = append(st.Cells, cell)
		}
		out = append(out, st)
	}
	return out
}

// maxStageRows bounds the matched stages a comparison shows (the report has them all).
const maxStageRows = 50

// comparisonViews reads the comparison report's comparisons (comparison_version 2).
func comparisonViews(rep map[string]any) []comparisonView {
	var out []comparisonView
	comps, _ := rep["comparisons"].([]any)
	for i, cmp := range comps {
		v := comparisonView{Label: str(get(cmp, "guide_case_id"))}
		if b := str(get(cmp, "baseline_case_id")); b != "" {
			v.Label += " vs " + b
			if bt := str(get(cmp, "baseline_type")); bt != "" {
				v.Label += " (" + bt + ")"
			}
		}
		if v.Label == "" {
			v.Label = "comparison " + strconv.Itoa(i+1)
		}
		switch get(cmp, "sla.met") {
		case true:
			v.SLA = "met"
		case false:
			v.SLA = "missed"
		}
		v.SLAChecks = readSLA(get(cmp, "sla"))
		for _, t := range stageMetrics {
			v.StageTitles = append(v.StageTitles, t.label)
		}
		v.Stages = append(matchedStages(get(cmp, "matrix_statistics"), false), matchedStages(get(cmp, "rate_stage_statistics"), true)...)
		var labels []string
		var values []float64
		for _, part := range []struct{ key, name string }{{"matrix_statistics", "matrix"}, {"rate_stage_statistics", "rate stages"}} {
			for _, f := range flatten(get(cmp, part.key+".geometric_mean_ratio")) {
				v.Rows = append(v.Rows, kv{Key: part.name + ": " + f.Key, Value: f.Value})
				if x, ok := f.Value.(float64); ok {
					labels, values = append(labels, f.Key), append(values, x)
				}
			}
		}
		if len(labels) > 0 {
			v.Chart = report.BarChart{Title: "Geometric mean ratio, guide / baseline (1 = equal)", YLabel: "ratio", Labels: labels, Values: values}.SVG()
		}
		if str(get(cmp, "baseline_case_id")) != "" {
			v.Parity, v.ParityValid = "valid", true
			if get(cmp, "parity.valid") != true {
				list, _ := get(cmp, "parity.reasons").([]any)
				for _, r := range list {
					v.ParityReasons = append(v.ParityReasons, str(r))
				}
				v.Parity, v.ParityValid = "not valid: "+strings.Join(v.ParityReasons, "; "), false
			}
			if g, b := get(cmp, "parity.guide_accelerators"), get(cmp, "parity.baseline_accelerators"); g != nil || b != nil {
				v.Accelerators = or(num(g), "?") + " vs " + or(num(b), "?")
			}
		}
		v.Level = confidenceLevel(get(cmp, "significance.confidence"))
		v.Changes, v.ChangeChart = changeViews(get(cmp, "significance.metrics"), v.Level)
		if g, b := get(cmp, "significance.guide_repetitions"), get(cmp, "significance.baseline_repetitions"); g != nil && b != nil {
			// Welch's t needs two repetitions a side; with fewer the requests are the noise.
			v.Repetitions = fmt.Sprintf("Welch's t over %s guide and %s baseline repetitions", num(g), num(b))
			gn, _ := g.(float64)
			if bn, _ := b.(float64); gn < 2 || bn < 2 {
				v.Repetitions = fmt.Sprintf("a bootstrap over the requests of %s guide and %s baseline repetitions (%s iterations)",
					num(g), num(b), num(get(cmp, "significance.iterations")))
			}
		}
		out = append(out, v)
	}
	return out
}

// confidenceLevel is a significance's confidence as a percentage ("95 %"; 95 % when the report
// names none, as reports before the level was a choice).
func confidenceLevel(c any) string {
	level, ok := c.(float64)
	if !ok || level <= 0 || level >= 1 {
		level = 0.95
	}
	return report.Level(level)
}

// changeViews reads a comparison's significance metrics (in the report's order) into rows and
// the "change versus the baseline" chart: each change with its interval (at level) as an error
// bar, a change inside its noise pale and kept from setting the chart's range.
func changeViews(metrics any, level string) ([]changeView, template.HTML) {
	m, ok := metrics.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, ""
	}
	chart := report.BarChart{Title: "Change versus the baseline, with " + level + " intervals", XLabel: "metric", YLabel: "Δ % (guide − baseline) / baseline"}
	var rows []changeView
	for _, k := range significanceOrder {
		e, ok := m[k].(map[string]any)
		if !ok {
			continue
		}
		row := changeView{Metric: k, Label: or(metricLabels[k], k), Guide: or(num(e["guide"]), "–"), Baseline: or(num(e["baseline"]), "–"),
			Ratio: "–", RatioInterval: "–", Change: "–", Interval: "–", Verdict: str(e["verdict"])}
		if r, ok := e["ratio"].(float64); ok {
			row.Ratio = report.Num(r) + "×"
		}
		if lo, ok := e["ratio_ci_low"].(float64); ok {
			if hi, ok := e["ratio_ci_high"].(float64); ok {
				row.RatioInterval = report.Num(lo) + "× to " + report.Num(hi) + "×"
			}
		}
		change, cok := e["change_percent"].(float64)
		lo, lok := e["change_percent_ci_low"].(float64)
		hi, hok := e["change_percent_ci_high"].(float64)
		if cok {
			row.Change = report.Num(change) + " %"
			chart.Labels, chart.Values = append(chart.Labels, k), append(chart.Values, change)
			if !lok || !hok {
				lo, hi = math.NaN(), math.NaN()
			}
			chart.Low, chart.High = append(chart.Low, lo), append(chart.High, hi)
			chart.Muted = append(chart.Muted, row.Verdict == "no significant difference")
			color := "#009E73" // the change favours the guide
			if change != 0 && (change > 0) != (e["higher_is_better"] == true) {
				color = "#D55E00"
			}
			chart.Colors = append(chart.Colors, color)
		}
		if lok && hok {
			row.Interval = report.Num(lo) + " to " + report.Num(hi) + " %"
		}
		rows = append(rows, row)
	}
	if len(chart.Values) == 0 {
		return rows, ""
	}
	return rows, chart.SVG()
}

// significanceOrder is the order of the significance's metrics (evalrun.RepeatedMetrics).
var significanceOrder = []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "itl_ms", "tpot_ms",
	"request_latency_ms", "error_rate"}

// --- inventory ---

func (c *Console) inventory(w http.ResponseWriter, r *http.Request, q *request) error {
	data := map[string]section{
		"services":       c.list(r.Context(), q, "/api/v1/model-services", "items"),
		"executions":     c.list(r.Context(), q, "/api/v1/deployments/executions", "items"),
		"configurations": c.list(r.Context(), q, "/api/v1/configurations", "items"),
	}
	c.render(w, http.StatusOK, q, "inventory", view{Title: "Model services and deployments", Nav: "inventory", Data: data})
	return nil
}

// --- template helpers ---

// or is s, or alt when s is empty.
func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// kv is one flattened leaf of a JSON object.
type kv struct {
	Key   string
	Value any
}

// maxFlatten bounds how many leaves a summary table shows.
const maxFlatten = 200

// flatten lists a JSON object's scalar leaves by dotted path, sorted.
func flatten(v any) []kv {
	var out []kv
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if len(out) >= maxFlatten {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, t[k])
			}
		case []any:
			// Lists (per-stage rows) belong in the report, not the headline table.
		case nil:
		default:
			out = append(out, kv{Key: prefix, Value: t})
		}
	}
	walk("", v)
	return out
}

// get reads a dotted path out of decoded JSON (nil when absent).
func get(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func has(v any, path string) bool { return get(v, path) != nil }

// str formats a JSON scalar for a page.
func str(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		return report.Num(t)
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	}
	return fmt.Sprint(v)
}

func num(v any) string {
	if f, ok := v.(float64); ok {
		return report.Num(f)
	}
	return str(v)
}

func pct(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return "0"
}

// percent shows a fraction as a percentage (as the run page's script does).
func percent(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
	}
	return str(v)
}

func dur(v any) string {
	if f, ok := v.(float64); ok {
		return (time.Duration(f * float64(time.Second))).Round(time.Millisecond).String()
	}
	return str(v)
}

// shortID cuts an id to its first 8 characters for a narrow cell (the link keeps the whole id,
// and so does the cell's title).
func shortID(v any) string {
	s := str(v)
	if len(s) > 12 {
		return s[:8] + "…"
	}
	return s
}

// short cuts a long id or URL for a table cell.
func short(v any) string {
	s := str(v)
	if len(s) > 48 {
		return s[:45] + "…"
	}
	return s
}

// topologyView is one configuration against another (the report's topology_comparisons: each
// pair of guides, such as two replicas against one): what each side ran, their headline numbers
// with the ratio left / right, and the matched stages.
type topologyView struct {
	Label       string
	Left, Right string // the configurations, in a line each
	Metrics     []topologyMetric
	Stages      []matchedStage
	StageTitles []string
	Chart       template.HTML
}

type topologyMetric struct{ Label, Left, Right, Ratio string }

// topologyMetricOrder is the headline metrics a topology comparison shows, in order.
var topologyMetricOrder = []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "itl_ms", "tpot_ms", "request_latency_ms"}

// describeConfiguration is one side of a topology comparison in a line: its guide, runtime,
// replicas and tensor parallelism.
func describeConfiguration(c any) string {
	parts := []string{or(str(get(c, "guide")), "configuration")}
	if rt := str(get(c, "runtime")); rt != "" {
		parts = append(parts, rt)
	}
	if n := num(get(c, "replicas")); n != "" {
		parts = append(parts, n+" replica"+map[bool]string{true: "", false: "s"}[n == "1"])
	}
	if tp := num(get(c, "tensor_parallel_size")); tp != "" && tp != "1" {
		parts = append(parts, "TP "+tp)
	}
	if pr, dr := num(get(c, "prefill_replicas")), num(get(c, "decode_replicas")); pr != "" || dr != "" {
		parts = append(parts, "prefill "+or(pr, "?")+" / decode "+or(dr, "?"))
	}
	return strings.Join(parts, " · ")
}

// topologyViews reads the report's topology comparisons.
func topologyViews(rep map[string]any) []topologyView {
	comps, _ := rep["topology_comparisons"].([]any)
	var out []topologyView
	for _, cmp := range comps {
		v := topologyView{Label: str(get(cmp, "left_case_id")) + " vs " + str(get(cmp, "right_case_id")),
			Left: describeConfiguration(get(cmp, "left")), Right: describeConfiguration(get(cmp, "right"))}
		var labels []string
		var values []float64
		for _, k := range topologyMetricOrder {
			l, r, ratio := get(cmp, "left_metrics."+k), get(cmp, "right_metrics."+k), get(cmp, "ratio."+k)
			if l == nil && r == nil && ratio == nil {
				continue
			}
			m := topologyMetric{Label: or(metricLabels[k], k), Left: or(num(l), "–"), Right: or(num(r), "–"), Ratio: "–"}
			if x, ok := ratio.(float64); ok {
				m.Ratio = report.Num(x) + "×"
				labels, values = append(labels, k), append(values, x)
			}
			v.Metrics = append(v.Metrics, m)
		}
		if len(labels) > 0 {
			v.Chart = report.BarChart{Title: "Ratio, left / right (1 = equal)", YLabel: "ratio", Labels: labels, Values: values}.SVG()
		}
		for _, t := range stageMetrics {
			v.StageTitles = append(v.StageTitles, t.label)
		}
		v.Stages = append(matchedStages(get(cmp, "matrix_statistics"), false), matchedStages(get(cmp, "rate_stage_statistics"), true)...)
		out = append(out, v)
	}
	return out
}
