package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/benchmarkrunner"
	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/secret"
)

// fakeModel is an OpenAI-compatible endpoint that streams a few tokens per completion and
// serves the vLLM gauges the runner's monitoring waits for.
func fakeModel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
			return
		case "/metrics":
			fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fake-model\"} 0\n"+
				"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"fake-model\"} 0\n")
			return
		}
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "text/event-stream")
		for range body.MaxTokens {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" tok\",\"finish_reason\":null}]}\n\n")
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", body.MaxTokens)
	})
}

// TestAFinishedRunValidatesAgainstTheDocument runs a benchmark to the end (evaluation-api
// queues it, a benchmark runner on the same store sends it to a fake endpoint) and checks the
// finished run's answers, with their metrics, results, SLA verdict and artifacts, against
// BenchmarkRunResponse.
func TestAFinishedRunValidatesAgainstTheDocument(t *testing.T) {
	model := httptest.NewServer(fakeModel())
	t.Cleanup(model.Close)
	a := apis[slices.IndexFunc(apis, func(a api) bool { return a.name == evaluationapi.Name })]
	s := startWith(t, a, `[{"id":"exec-1","cluster_session_id":"session-1","name":"fake","model":"fake-model","endpoint":"`+model.URL+`/v1","namespace":"local"}]`)
	_, c := fetchDocument(t, s, a)
	sealer, err := secret.FromEnv(s.key)
	if err != nil {
		t.Fatal(err)
	}
	runs := &evalrun.Repo{Store: s.deps.Store, Sealer: sealer, DataDir: s.deps.Config.DataDir}
	runner := benchmarkrunner.NewRunner(s.deps, benchmarkrunner.Settings{MaxConcurrent: 1, LeaseTTL: 5 * time.Second,
		SweepInterval: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond, ReportInterval: 100 * time.Millisecond,
		ScrapeInterval: 50 * time.Millisecond}, runs)
	ctx, stop := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() { defer close(swept); runner.Sweep(ctx) }()
	t.Cleanup(func() { stop(); <-swept; _ = runner.Close(context.Background()) })
	token := fntest.Token(t, s.server)

	get := func(method, path, body string) (int, any) {
		t.Helper()
		code, raw := send(t, s, token, method, path, body)
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: %v %s", method, path, err, raw)
		}
		return code, v
	}
	code, created := get("POST", eval+"/runs", `{"deployment_execution_id":"exec-1","matrix":[{"isl":16,"osl":4}],
		"concurrency_stages":[{"concurrency":2,"num_requests":6}],"warmup_requests":1,"sla_targets":{"ttft_ms":60000}}`)
	if code != http.StatusAccepted {
		t.Fatalf("create: %d %v", code, created)
	}
	id := created.(map[string]any)["id"].(string)
	deadline := time.Now().Add(90 * time.Second)
	var run map[string]any
	for {
		_, v := get("GET", eval+"/runs/"+id, "")
		run = v.(map[string]any)
		if evalrun.Terminal(fmt.Sprint(run["status"])) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish: %v", run["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if run["status"] != evalrun.StatusSucceeded || run["metrics"] == nil || run["matrix_results"] == nil || run["sla"] == nil {
		t.Fatalf("the run did not succeed with results: %v %v", run["status"], run["error"])
	}
	fits(t, c, "GET /runs/{id} (succeeded)", eval+"/runs/{id}", "get", 200, run)
	_, list := get("GET", eval+"/runs", "")
	fits(t, c, "GET /runs (a succeeded run)", eval+"/runs", "get", 200, list)
}
