package evalrun

import (
	"strings"

	"github.com/lensfn/lensfn/events"
)

// What the in-process load generator cannot honour. The spec's llm-d-benchmark runs a harness
// pod from a checked-out repository, behind optional proxies, with a results volume; Lensfn's
// benchmark-runner generates the load itself (runtime/loadgen), from the workloads it ships and
// through the operator's egress policy, and keeps results in the state store. A setting that
// would change that is refused with a 422 naming it, never stored and ignored.

// RefusedHarnesses are llm-d-benchmark's other harnesses, named in the refusal so a caller
// sees the mapping (README of evaluation-api).
var RefusedHarnesses = []string{"guidellm", "vllm-benchmark", "fmperf", "inferencemax", "nop"}

// checkSpecHonoured refuses the spec fields the load generator cannot honour: a harness other
// than inference-perf, and a results volume's storage class.
func checkSpecHonoured(fe *fieldErrors, spec events.BenchmarkSpec, loc ...string) {
	at := func(name string) []string { return append(append([]string{}, loc...), name) }
	if h := spec.Harness; h != nil && len(*h) <= 64 && *h != HarnessInferencePerf {
		fe.add("harness "+quote(*h)+" cannot run here: the in-process load generator implements inference-perf only "+
			"(llm-d-benchmark's "+strings.Join(RefusedHarnesses, ", ")+" are not run); use inference-perf", "value_error", at("harness")...)
	}
	if s := spec.StorageClassName; s != nil && *s != "" {
		fe.add("cannot be honoured: the in-process load generator keeps results in Lensfn's state store and mounts no "+
			"results volume; leave storage_class_name null", "value_error", at("storage_class_name")...)
	}
}

// checkSourceAndProxies refuses a benchmark_source other than the defaults (Lensfn runs the
// workloads it ships, taken from that repository and revision; it fetches nothing) and any
// non-empty proxy (the load generator connects through Lensfn's egress policy, never a proxy).
// proxyLoc prefixes the proxies' location (nothing on a run, "runtime" on an evaluation).
func checkSourceAndProxies(fe *fieldErrors, src *events.BenchmarkSource, proxies map[string]*string, proxyLoc ...string) {
	if src != nil {
		if r := src.Repository; r != nil && *r != "" && strings.TrimSuffix(*r, ".git") != strings.TrimSuffix(DefaultRepository, ".git") {
			fe.add("cannot be honoured: Lensfn fetches no benchmark repository; its load generator runs the workloads it ships, "+
				"taken from "+DefaultRepository+" (leave benchmark_source out or name that repository)", "value_error", "benchmark_source", "repository")
		}
		if r := src.Revision; r != nil && *r != "" && *r != DefaultRevision {
			fe.add("cannot be honoured: Lensfn fetches no benchmark revision; its workloads follow "+DefaultRevision+
				" (leave revision out or name "+DefaultRevision+")", "value_error", "benchmark_source", "revision")
		}
	}
	for _, name := range []string{"http_proxy", "https_proxy", "no_proxy"} {
		if v := proxies[name]; v != nil && strings.TrimSpace(*v) != "" {
			fe.add("cannot be honoured: the load generator connects through Lensfn's egress policy, not a proxy; leave "+name+" empty",
				"value_error", append(append([]string{}, proxyLoc...), name)...)
		}
	}
}

// CheckEvaluationSettings refuses what an evaluation's runtime and benchmark_source ask that the
// load generator cannot honour (422, every field named); workflow validation calls it.
func CheckEvaluationSettings(req events.EvaluationCreateRequest) error {
	var fe fieldErrors
	var proxies map[string]*string
	if rt := req.Runtime; rt != nil {
		proxies = map[string]*string{"http_proxy": rt.HTTPProxy, "https_proxy": rt.HTTPSProxy, "no_proxy": rt.NoProxy}
	}
	checkSourceAndProxies(&fe, req.BenchmarkSource, proxies, "runtime")
	return fe.err()
}

func quote(s string) string { return `"` + s + `"` }
