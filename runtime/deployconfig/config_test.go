package deployconfig

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/problem"
)

func fieldLocs(t *testing.T, err error) []string {
	t.Helper()
	var pe *problem.Error
	if err == nil || !errorsAs(err, &pe) || pe.Code != problem.CodeValidation {
		t.Fatalf("want a 422 problem, got %v", err)
	}
	var locs []string
	for _, f := range pe.Detail.([]problem.FieldError) {
		locs = append(locs, strings.Join(f.Location, ".")+": "+f.Message)
	}
	return locs
}

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name, provider, content, profile string
		gpus                             int
	}{
		{"direct vllm", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{"replicas":4}}`, "", 4},
		{"optimized default profile", ProviderOptimizedBaseline, `{"model":{"name":"m"},"decode":{"replicas":2,"tensor_parallel_size":2}}`, ProfileOptimized, 4},
		{"affinity profile", ProviderOptimizedBaseline, `{"model":{"name":"m"},"decode":{"replicas":2},"router":{"profile":"prefix-affinity"}}`, ProfilePrefixAffinity, 2},
		{"precise", ProviderPrecisePrefix, `{"model":{"name":"m"},"decode":{"replicas":2},"simulator":{"enable-kvcache":true,"block-size":16}}`, ProfilePrecisePrefix, 2},
		{"pd", ProviderPD, `{"model":{"name":"m"},"decode":{"replicas":2},"prefill":{"replicas":1,"tensor_parallel_size":2}}`, ProfilePD, 4},
		{"engine model", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{"replicas":2,"tensor_parallel_size":2,"max_num_seqs":64},
		  "simulator":{"latency-calculator":"engine","engine-model":"Llama-3.1-8B-Instruct","hardware":"h100","max-num-batched-tokens":2048,
		  "gpu-memory-utilization":0.85,"no-enable-prefix-caching":true,"step-cost-coefficients":{"compute_efficiency":0.5,"memory_efficiency":0.8,"step_overhead_us":500,"layer_overhead_us":10,"seq_overhead_us":5,"allreduce_us":20,"request_overhead_us":5000}}}`, "", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(tc.provider, json.RawMessage(tc.content))
			if err != nil {
				t.Fatal(err)
			}
			if d.Profile() != tc.profile || d.GPUs() != tc.gpus || d.Content.Model.Name != "m" {
				t.Fatalf("profile %q gpus %d, want %q %d", d.Profile(), d.GPUs(), tc.profile, tc.gpus)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ name, provider, content, wantLoc string }{
		{"unknown top key", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"replica":3}`, "body.content.replica: unknown key"},
		{"unknown nested key", ProviderBaselineVLLM, `{"model":{"name":"m","revision":"x"},"decode":{}}`, "body.content.model.revision: unknown key"},
		{"unknown simulator flag", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"no-such-flag":1}}`, "body.content.simulator.no-such-flag: unknown key"},
		{"reserved flag", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"port":1}}`, "body.content.simulator.port: \"port\" is not settable"},
		{"wrong flag kind", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"block-size":"16"}}`, "body.content.simulator.block-size: must be an integer"},
		{"bool flag kind", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"enable-kvcache":"yes"}}`, "body.content.simulator.enable-kvcache: must be true"},
		{"replicas bound", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{"replicas":33}}`, "body.content.decode.replicas: must be an integer from 1 to 32"},
		{"fractional", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{"replicas":1.5}}`, "body.content.decode.replicas: must be an integer"},
		{"model missing", ProviderBaselineVLLM, `{"decode":{}}`, "body.content.model: field required"},
		{"model name empty", ProviderBaselineVLLM, `{"model":{"name":""},"decode":{}}`, "body.content.model.name: must be a string"},
		{"router on direct", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"router":{"profile":"random"}}`, "body.content.router.profile: baseline-vllm runs no router"},
		{"wrong profile", ProviderOptimizedBaseline, `{"model":{"name":"m"},"decode":{},"router":{"profile":"pd"}}`, "body.content.router.profile: optimized-baseline routes with"},
		{"prefill outside pd", ProviderOptimizedBaseline, `{"model":{"name":"m"},"decode":{},"prefill":{"replicas":1}}`, "body.content.prefill: only pd-disaggregation"},
		{"pd without prefill", ProviderPD, `{"model":{"name":"m"},"decode":{}}`, "body.content.prefill: field required"},
		{"precise without kv cache", ProviderPrecisePrefix, `{"model":{"name":"m"},"decode":{},"simulator":{"enable-kvcache":false}}`, "body.content.simulator.enable-kvcache"},
		{"list item is a flag", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"failure-types":["--port"]}}`, "body.content.simulator.failure-types: item 0"},
		{"not an object", ProviderBaselineVLLM, `[1]`, "body.content: must be a JSON object"},
		{"engine model not in the catalogue", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"engine-model":"acme/secret-40b"}}`, "body.content.simulator.engine-model: unknown model"},
		{"engine model path", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"engine-model":"/etc/models/config.json"}}`, "body.content.simulator.engine-model: model \"/etc/models/config.json\": file paths are not accepted"},
		{"hardware path", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"hardware":"./gpu.json"}}`, "body.content.simulator.hardware: hardware \"./gpu.json\": file paths"},
		{"step-cost module path", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"step-cost-module":"/tmp/x.wasm"}}`, "body.content.simulator.step-cost-module: must name a loaded module"},
		{"bad coefficients", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"step-cost-coefficients":{"compute_efficiency":7}}}`, "body.content.simulator.step-cost-coefficients: coefficients"},
		{"tp as a flag", ProviderBaselineVLLM, `{"model":{"name":"m"},"decode":{},"simulator":{"tensor-parallel-size":2}}`, "body.content.simulator.tensor-parallel-size: \"tensor-parallel-size\" is not settable"},
		{"unknown provider", "helm-chart", `{}`, "body.provider_ref: provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.provider, json.RawMessage(tc.content))
			locs := fieldLocs(t, err)
			if !slices.ContainsFunc(locs, func(l string) bool { return strings.HasPrefix(l, tc.wantLoc) }) {
				t.Fatalf("want a field error starting %q, got %q", tc.wantLoc, locs)
			}
		})
	}
}

func TestReplicaArgs(t *testing.T) {
	d, err := Parse(ProviderOptimizedBaseline, json.RawMessage(`{"model":{"name":"m"},"decode":{"replicas":2,"max_num_seqs":8},
		"simulator":{"latency-calculator":"per-token","prefill-time-per-token":"0.2ms","inter-token-latency":"2ms","block-size":16,
		"enable-kvcache":true,"failure-types":["rate_limit","server_error"],"time-factor-under-load":1.5,"fake-metrics":{"running-requests": 3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(d.Content.ReplicaArgs(), " ")
	want := `--model m --max-num-seqs=8 --block-size=16 --enable-kvcache=true --failure-types rate_limit server_error ` +
		`--fake-metrics={"running-requests":3} --inter-token-latency=2ms --latency-calculator=per-token --prefill-time-per-token=0.2ms --time-factor-under-load=1.5`
	if got != want {
		t.Fatalf("args\n got %s\nwant %s", got, want)
	}
	if d.Content.BlockSize() != 16 {
		t.Fatal("block size")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(ProviderPD, `{"model":{"name":"m"},"decode":{"replicas":2},"prefill":{"replicas":1},"simulator":{"block-size":16}}`)
	f.Fuzz(func(t *testing.T, provider, content string) {
		d, err := Parse(provider, json.RawMessage(content))
		if err == nil && (d.Content.Decode.Replicas < 1 || d.Content.Decode.Replicas > MaxReplicas || d.Content.Model.Name == "") {
			t.Fatalf("accepted an out-of-bounds configuration: %+v", d)
		}
	})
}

func errorsAs(err error, target **problem.Error) bool { return errors.As(err, target) }
