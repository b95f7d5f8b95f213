package evalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore/redistest"
)

func newRepo(t *testing.T) *Repo {
	t.Helper()
	store := redistest.Open(t)
	sealer, err := secret.FromEnv(secret.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return &Repo{Store: store, Sealer: sealer, DataDir: t.TempDir()}
}

var target = Target{ExecutionID: "exec-1", ClusterSessionID: "session-1", Name: "sim", Model: "fake-model",
	Endpoint: "http://127.0.0.1:8000/v1", Ownership: "existing-endpoint", Status: "ready"}

func build(t *testing.T, body string) *Run {
	t.Helper()
	req, raw, err := ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateRequest(req); err != nil {
		t.Fatal(err)
	}
	return BuildRun(NewID(), req, raw, target)
}

func TestStoredFieldsSurviveAReadAsWritten(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	run := build(t, `{"deployment_execution_id":"exec-1","accelerator_profile":null,"matrix":[{"isl":16,"osl":8}],`+
		`"concurrency_stages":[{"concurrency":2,"num_requests":4}],"api_key":"sk-secret","sla_targets":{"ttft_ms":500}}`)
	run.Extra["from_a_newer_version"] = json.RawMessage(`{"x":1}`) // the request's explicit null is there already
	if err := repo.Create(ctx, run, "sk-secret"); err != nil {
		t.Fatal(err)
	}
	got, err := repo.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(doc, &m)
	if string(m["accelerator_profile"]) != "null" {
		t.Errorf("explicit null became %s", m["accelerator_profile"])
	}
	for _, absent := range []string{"shared_prefix", "workload_yaml", "storage_class_name", "api_key", "finished_at"} {
		if _, ok := m[absent]; ok {
			t.Errorf("%s is present: %s", absent, m[absent])
		}
	}
	if string(m["from_a_newer_version"]) != `{"x":1}` {
		t.Errorf("unknown stored field lost: %s", m["from_a_newer_version"])
	}
	if strings.Contains(string(doc), "sk-secret") {
		t.Fatal("the API key is in the document")
	}
	var bench map[string]json.RawMessage
	_ = json.Unmarshal(m["benchmark"], &bench)
	if string(bench["shared_prefix"]) != "null" || string(bench["wait_timeout_seconds"]) != "null" || string(bench["warmup_requests"]) != "2" {
		t.Errorf("benchmark block = %s", m["benchmark"])
	}
	if string(m["wait_timeout_seconds"]) != "900" || string(m["kind"]) != `"benchmark"` || string(m["status"]) != `"queued"` {
		t.Errorf("resolved fields: wait=%s kind=%s status=%s", m["wait_timeout_seconds"], m["kind"], m["status"])
	}
	if got.Timing == nil || got.Timing.Basis != "configuration" || got.Timing.Phases.Len() == 0 ||
		!slices.Equal(got.Timing.Phases.Names(), run.Timing.Phases.Names()) {
		t.Errorf("timing = %s", m["timing"])
	}
	key, err := repo.APIKey(got)
	if err != nil || key != "sk-secret" {
		t.Fatalf("sealed key opens to %q, %v", key, err)
	}
}

// A stored field this version does not know, and a stored explicit null, survive a
// read-modify-write (a patch and a transition) as stored.
func TestUnknownStoredFieldsSurviveAReadModifyWrite(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	run := build(t, `{"deployment_execution_id":"exec-1","sla_targets":null,"matrix":[]}`)
	run.Extra["from_a_newer_version"] = json.RawMessage(`{"x":[1,null]}`) // with the request's null and []
	if err := repo.Create(ctx, run, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Patch(ctx, run.ID, state.Fence{}, func(r *Run) error {
		r.ProgressMessage = ptr("patched")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Transition(ctx, run.ID, Sources(StatusRunning), StatusRunning, state.Fence{}, func(r *Run) error {
		r.StartedAt = ptr(Now())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := repo.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(doc, &m)
	for k, want := range map[string]string{"from_a_newer_version": `{"x":[1,null]}`, "sla_targets": "null", "matrix": "[]",
		"progress_message": `"patched"`, "status": `"running"`} {
		if string(m[k]) != want {
			t.Errorf("%s = %s, want %s", k, m[k], want)
		}
	}
	if _, ok := m["started_at"]; !ok {
		t.Error("the transition's write is lost")
	}
}

// A run stored by an older version reads as it did: a benchmark block without a key has that
// key's default, and fields it lacks stay absent.
func TestARunStoredByAnOlderVersionReadsWithItsDefaults(t *testing.T) {
	old := `{"kind":"benchmark","id":"r1","status":"succeeded","created_at":"2026-01-01T00:00:00.000000Z",` +
		`"benchmark":{"harness":"inference-perf","workload":"sanity_random.yaml","parallelism":2,"wait_timeout_seconds":null,` +
		`"harness_memory_gib":8,"matrix":[],"concurrency_stages":[],"warmup_requests":2,"shared_prefix":null,` +
		`"workload_yaml":null,"accelerator_profile":null,"storage_class_name":null},` +
		`"error":null,"_internal":{"model":"m","endpoint":"http://127.0.0.1:1/v1"}}`
	run, err := Unmarshal([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := run.Spec()
	if err != nil || *spec.Repetitions != DefaultRepetitions || *spec.Parallelism != 2 || spec.WaitTimeoutSeconds != nil {
		t.Fatalf("spec = %+v, %v", spec, err)
	}
	if run.Internal.Model != "m" || run.Error.Valid() || run.ErrorText() != "" {
		t.Errorf("internal %+v, error %v", run.Internal, run.Error)
	}
	doc, _ := json.Marshal(run)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(doc, &m)
	if string(m["error"]) != "null" || m["_internal"] != nil || m["metrics"] != nil || m["finished_at"] != nil {
		t.Errorf("document = %s", doc)
	}
}

func TestTransitionsFollowTheStateMachine(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	run := build(t, `{"deployment_execution_id":"exec-1"}`)
	if err := repo.Create(ctx, run, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Transition(ctx, run.ID, Sources(StatusSucceeded), StatusSucceeded, state.Fence{}, nil); !errors.Is(err, state.ErrInvalidTransition) {
		t.Fatalf("queued -> succeeded: %v", err)
	}
	for _, to := range []string{StatusRunning, StatusCancelling, StatusCancelled} {
		if _, err := repo.Transition(ctx, run.ID, Sources(to), to, state.Fence{}, nil); err != nil {
			t.Fatalf("-> %s: %v", to, err)
		}
	}
	if Sources(StatusRunning)[0] != StatusQueued || len(Sources(StatusRunning)) != 1 {
		t.Fatalf("sources of running = %v", Sources(StatusRunning))
	}
	if !Terminal(StatusCancelled) || Terminal(StatusCancelling) {
		t.Fatal("terminal statuses")
	}
}

func TestValidateRequest(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		mention    string
	}{
		{"neither target", `{}`, 422, "exactly one"},
		{"both targets", `{"deployment_execution_id":"a","model_service_group_id":"b","api_key":"k"}`, 422, "exactly one"},
		{"group without key", `{"model_service_group_id":"b"}`, 422, "api_key"},
		{"unknown field", `{"deployment_execution_id":"a","nope":1}`, 422, "nope"},
		{"parallelism 33", `{"deployment_execution_id":"a","parallelism":33}`, 422, "parallelism"},
		{"warmup 51", `{"deployment_execution_id":"a","matrix":[{"isl":1,"osl":1}],"warmup_requests":51}`, 422, "warmup_requests"},
		{"51 matrix points", `{"deployment_execution_id":"a","matrix":[` + strings.Repeat(`{"isl":1,"osl":1},`, 50) + `{"isl":1,"osl":1}]}`, 422, "matrix"},
		{"21 stages", `{"deployment_execution_id":"a","matrix":[{"isl":1,"osl":1}],"concurrency_stages":[` +
			strings.Repeat(`{"concurrency":1,"num_requests":1},`, 20) + `{"concurrency":1,"num_requests":1}]}`, 422, "concurrency_stages"},
		{"concurrency 4097", `{"deployment_execution_id":"a","matrix":[{"isl":1,"osl":1}],"concurrency_stages":[{"concurrency":4097,"num_requests":1}]}`, 422, "concurrency"},
		{"rate 10001", `{"deployment_execution_id":"a","shared_prefix":{"num_groups":1,"num_prompts_per_group":1,"system_prompt_len":1,"question_len":1,"output_len":1,"stages":[{"rate":10001,"duration":1}]}}`, 422, "rate"},
		{"matrix and shared_prefix", `{"deployment_execution_id":"a","matrix":[{"isl":1,"osl":1}],"shared_prefix":{"num_groups":1,"num_prompts_per_group":1,"system_prompt_len":1,"question_len":1,"output_len":1,"stages":[{"rate":1,"duration":1}]}}`, 422, "mutually exclusive"},
		{"yaml without data", `{"deployment_execution_id":"a","workload_yaml":"load: {}\napi: {}\n"}`, 422, "data"},
		{"yaml too big", `{"deployment_execution_id":"a","workload_yaml":"` + strings.Repeat("a", MaxWorkloadYAMLBytes+1) + `"}`, 422, "workload_yaml"},
		{"timeout 0", `{"deployment_execution_id":"a","wait_timeout_seconds":0}`, 422, "wait_timeout_seconds"},
		{"timeout 14401", `{"deployment_execution_id":"a","wait_timeout_seconds":14401}`, 422, "wait_timeout_seconds"},
		{"bad percentile", `{"deployment_execution_id":"a","sla_targets":{"ttft_ms":1,"ttft_percentile":"p42"}}`, 422, "ttft_percentile"},
		{"ttft 0", `{"deployment_execution_id":"a","sla_targets":{"ttft_ms":0}}`, 422, "ttft_ms"},
		{"success 101", `{"deployment_execution_id":"a","sla_targets":{"success_rate_min_percent":101}}`, 422, "success_rate_min_percent"},
		{"workload with a directory", `{"deployment_execution_id":"a","workload":"../etc/passwd"}`, 422, "workload"},
		{"unknown harness", `{"deployment_execution_id":"a","harness":"guidellm"}`, 422, "inference-perf only"},
		{"unknown named workload", `{"deployment_execution_id":"a","workload":"nope.yaml"}`, 400, "sanity_random.yaml"},
		{"wrong type", `{"deployment_execution_id":"a","parallelism":"2"}`, 422, "parallelism"},
		// 4 sessions share 4,004 requests: 1,001 turns each, over MaxSessionTurns.
		{"multi-turn turns per session", multiTurnBody(2, 2, 8, 8, 4, `{"rate":1001,"duration":4}`), 422, `"shared_prefix","stages"`},
		// 20 turns of 8,000-token questions outgrow the prompt limit by the last turn.
		{"multi-turn context", multiTurnBody(2, 2, 8, 8000, 4, `{"rate":8,"duration":10}`), 422, `"shared_prefix","enable_multi_turn_chat"`},
		// 10,000 sessions of 2 turns holding 16,001 tokens each are too much at once.
		{"multi-turn held context", multiTurnBody(100, 100, 16000, 1, 1, `{"rate":1000,"duration":20}`), 422, "live sessions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _, err := ParseRequest([]byte(tc.body))
			if err == nil {
				err = ValidateRequest(req)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			body := problem.BodyFor(err, "")
			detail, _ := json.Marshal(body.Detail)
			if body.Status != tc.status || !strings.Contains(string(detail), tc.mention) {
				t.Fatalf("status %d detail %s; want %d mentioning %q", body.Status, detail, tc.status, tc.mention)
			}
		})
	}
	multi := multiTurnBody(2, 2, 8, 8, 4, `{"rate":10,"duration":4}`)
	if req, _, err := ParseRequest([]byte(multi)); err != nil || ValidateRequest(req) != nil {
		t.Fatalf("a multi-turn shared prefix within the bounds is refused: %v %v", err, ValidateRequest(req))
	}
	ok := `{"deployment_execution_id":"a","matrix":[{"isl":1024,"osl":128}],"concurrency_stages":[{"concurrency":8,"num_requests":96}],"warmup_requests":2,` +
		`"sla_targets":{"ttft_ms":500,"ttft_percentile":"p99","tpot_ms":50,"tpot_percentile":"p99","throughput_min_tps":1000,"success_rate_min_percent":99}}`
	req, _, err := ParseRequest([]byte(ok))
	if err == nil {
		err = ValidateRequest(req)
	}
	if err != nil {
		t.Fatalf("the spec's example is refused: %v", err)
	}
}

// multiTurnBody is a run request of a multi-turn shared-prefix workload.
func multiTurnBody(groups, prompts, system, question, output int, stages string) string {
	return fmt.Sprintf(`{"deployment_execution_id":"a","shared_prefix":{"num_groups":%d,"num_prompts_per_group":%d,"system_prompt_len":%d,`+
		`"question_len":%d,"output_len":%d,"enable_multi_turn_chat":true,"stages":[%s]}}`, groups, prompts, system, question, output, stages)
}

// A stored field of another shape than this version's Go field is kept as stored, and a Go
// field set since a read wins over the stored value Extra kept for it.
func TestStoredFieldsOfAnotherShapeAreKept(t *testing.T) {
	run, err := Unmarshal([]byte(`{"kind":"benchmark","id":"r1","status":"running","created_at":"x",` +
		`"progress_percent":"half","phase":null,"future":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if run.ProgressPercent != nil || run.Phase != nil || string(run.Extra["progress_percent"]) != `"half"` {
		t.Fatalf("progress %v phase %v extra %s", run.ProgressPercent, run.Phase, run.Extra)
	}
	doc, err := json.Marshal(run)
	if err != nil || !strings.Contains(string(doc), `"progress_percent":"half"`) || !strings.Contains(string(doc), `"phase":null`) ||
		!strings.Contains(string(doc), `"future":[1]`) {
		t.Fatalf("document %s, %v", doc, err)
	}
	run.Phase, run.ProgressPercent = ptr(PhaseWarmup), ptr(50.0)
	doc, _ = json.Marshal(run)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil || string(m["phase"]) != `"warmup"` || string(m["progress_percent"]) != "50" {
		t.Fatalf("document %s, %v", doc, err)
	}
	run.Extra["broken"] = json.RawMessage(`{`)
	if _, err := json.Marshal(run); err == nil {
		t.Fatal("an Extra field that is not JSON was written")
	}
}

// A new run's stream starts with queued, written before the record a runner could claim; a
// second Create of the same id is refused and adds nothing to the first run's stream.
func TestCreateWritesQueuedFirstAndOnce(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	run := build(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":16,"osl":8}],"concurrency_stages":[{"concurrency":2,"num_requests":4}]}`)
	if err := repo.Create(ctx, run, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Transition(ctx, run.ID, []string{StatusQueued}, StatusRunning, state.Fence{}, func(*Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	again := *run
	again.Status = StatusQueued
	if err := repo.Create(ctx, &again, ""); !errors.Is(err, state.ErrExists) {
		t.Fatalf("a second Create of %s: %v", run.ID, err)
	}
	entries, err := repo.Store.ReadProgress(ctx, Kind, run.ID, "", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, e := range entries {
		statuses = append(statuses, e.Fields["status"])
	}
	if got := strings.Join(statuses, ","); got != "queued,running" {
		t.Errorf("stream statuses %s, want queued,running", got)
	}
}
