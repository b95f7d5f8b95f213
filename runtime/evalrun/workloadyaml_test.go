package evalrun

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/problem"
)

const constantYAML = `load:
  type: constant
  stages:
    - rate: 2
      duration: 3
  request_timeout: 30
api:
  type: completion
  streaming: true
server:
  type: vllm
  model_name: ignored
  base_url: http://ignored
  ignore_eos: true
data:
  type: random
  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10, total_count: 100}
  output_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
report:
  request_lifecycle: {summary: true, per_stage: true, per_request: true}
storage:
  local_storage: {path: /workspace}
`

func TestParseWorkloadYAML(t *testing.T) {
	cfg, err := ParseWorkloadYAML(constantYAML)
	if err != nil {
		t.Fatal(err)
	}
	w, sp := cfg.Workload()
	if sp != nil || len(w.Stages) != 1 || w.Stages[0].Rate != 2 || !w.Stream || w.Input.Mean != 50 || w.RequestTimeout != 30 {
		t.Fatalf("workload %+v", w)
	}
	concurrent := "load:\n  type: concurrent\n  stages: [{num_requests: 10, concurrency_level: 2}]\napi: {type: chat}\ndata: {type: synthetic}\n"
	cfg, err = ParseWorkloadYAML(concurrent)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := cfg.Workload(); len(w.ConcurrencyStages) != 1 || w.ConcurrencyStages[0].Concurrency != 2 || w.API != "chat" || w.Stream ||
		w.Input != (Distribution{Min: 10, Max: 1024, Mean: 512, StdDev: 200}) {
		t.Fatalf("concurrent workload %+v", w)
	}
	shared := "load: {type: poisson, stages: [{rate: 1, duration: 5}]}\napi: {streaming: true}\n" +
		"data:\n  type: shared_prefix\n  shared_prefix: {num_groups: 2, num_prompts_per_group: 3, system_prompt_len: 64, question_len: 8, output_len: 4}\n"
	cfg, err = ParseWorkloadYAML(shared)
	if err != nil {
		t.Fatal(err)
	}
	if _, sp := cfg.Workload(); sp == nil || sp.NumGroups != 2 || len(sp.Stages) != 1 || sp.EnableMultiTurnChat != nil {
		t.Fatalf("shared prefix %+v", sp)
	}
	multi := strings.Replace(shared, "output_len: 4}", "output_len: 4, enable_multi_turn_chat: true}", 1)
	if cfg, err = ParseWorkloadYAML(multi); err != nil {
		t.Fatalf("inference-perf's enable_multi_turn_chat: %v", err)
	}
	if _, sp := cfg.Workload(); sp == nil || sp.EnableMultiTurnChat == nil || !*sp.EnableMultiTurnChat {
		t.Fatalf("multi-turn shared prefix %+v", sp)
	}

	bad := []struct{ name, yaml, mention string }{
		{"unknown top-level key", constantYAML + "bogus_section: 1\n", "bogus_section"},
		{"unknown nested key", strings.Replace(constantYAML, "request_timeout: 30", "request_timout: 30", 1), "request_timout"},
		{"std instead of std_dev", strings.Replace(constantYAML, "std_dev: 10, total_count", "std: 10, total_count", 1), "std"},
		{"wrong type", strings.Replace(constantYAML, "rate: 2", "rate: fast", 1), "line"},
		{"rate stage with num_requests", "load: {type: constant, stages: [{rate: 1, duration: 1, num_requests: 3}]}\napi: {}\ndata: {type: random}\n", "num_requests"},
		{"concurrent stage with a rate", "load: {type: concurrent, stages: [{rate: 1, num_requests: 3, concurrency_level: 1}]}\napi: {}\ndata: {type: random}\n", "concurrent stage"},
		{"trace replay", "load: {type: trace_replay, stages: [{rate: 1, duration: 1}]}\napi: {}\ndata: {type: random}\n", "trace_replay"},
		{"unsupported data", "load: {stages: [{rate: 1, duration: 1}]}\napi: {}\ndata: {type: shareGPT}\n", "shareGPT"},
		{"missing data", "load: {stages: [{rate: 1, duration: 1}]}\napi: {}\n", "load, api and data"},
		{"no stages", "load: {type: constant}\napi: {}\ndata: {type: random}\n", "at least one stage"},
		{"rate too high", "load: {stages: [{rate: 10001, duration: 1}]}\napi: {}\ndata: {type: random}\n", "rate"},
		{"two documents", constantYAML + "---\nload: {}\n", "one YAML document"},
		{"empty", "", "empty"},
		// 2 x 3 sessions share 7,000 requests: ~1,167 turns each, over MaxSessionTurns.
		{"multi-turn turns per session", strings.Replace(multi, "rate: 1, duration: 5", "rate: 100, duration: 70", 1),
			`"load","stages"`},
		// 100 turns of 1,000-token questions and 400-token replies outgrow the context limit.
		{"multi-turn context", strings.Replace(strings.Replace(multi, "rate: 1, duration: 5", "rate: 60, duration: 10", 1), "question_len: 8, output_len: 4", "question_len: 1000, output_len: 400", 1),
			"enable_multi_turn_chat"},
		{"lengths", "load: {stages: [{rate: 1, duration: 1}]}\napi: {}\ndata: {type: random, input_distribution: {min: 0, max: 10}}\n", "min"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkloadYAML(tc.yaml)
			if err == nil {
				t.Fatal("accepted")
			}
			b := problem.BodyFor(err, "")
			detail, _ := json.Marshal(b.Detail)
			if b.Status != 422 || !strings.Contains(string(detail), tc.mention) || !strings.Contains(string(detail), "workload_yaml") {
				t.Fatalf("%d %s, want 422 naming %q", b.Status, detail, tc.mention)
			}
		})
	}
}

func TestRunRequestValidatesItsWorkloadYAML(t *testing.T) {
	body, _ := json.Marshal(map[string]any{"deployment_execution_id": "e", "workload_yaml": constantYAML + "surprise: 1\n"})
	req, _, err := ParseRequest(body)
	if err == nil {
		err = ValidateRequest(req)
	}
	if b := problem.BodyFor(err, ""); b.Status != 422 || !strings.Contains(toJSON(b.Detail), "surprise") {
		t.Fatalf("%v", err)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// FuzzParseWorkloadYAML: any text is accepted or refused with a 422 naming workload_yaml, never
// a panic or another error.
func FuzzParseWorkloadYAML(f *testing.F) {
	for _, seed := range []string{constantYAML, "load: {type: concurrent, stages: [{num_requests: 1, concurrency_level: 1}]}\napi: {}\ndata: {type: random}\n",
		"load: [1, 2]\napi: null\ndata: {type: shared_prefix}\n", "{", "- a\n- b\n", "load: &a {stages: *a}\n", "a: b: c"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := ParseWorkloadYAML(text)
		if err != nil {
			if b := problem.BodyFor(err, ""); b.Status != 422 || !strings.Contains(toJSON(b.Detail), "workload_yaml") {
				t.Fatalf("error %v is not a 422 about workload_yaml", err)
			}
			return
		}
		w, sp := cfg.Workload() // an accepted config always becomes a runnable workload
		if len(w.Stages) == 0 && len(w.ConcurrencyStages) == 0 && sp == nil {
			t.Fatalf("accepted config with no stages: %q", text)
		}
	})
}
