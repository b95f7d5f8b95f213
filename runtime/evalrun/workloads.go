package evalrun

import (
	"slices"

	"github.com/lensfn/lensfn/events"
)

// Distribution is a token-length distribution of a generated workload (inference-perf's
// min/max/mean/std_dev).
type Distribution struct {
	Min, Max, Mean, StdDev int
}

// Workload is a named workload shipped with Lensfn: open-loop rate stages of random-length
// requests, or closed-loop concurrency stages.
type Workload struct {
	Name              string
	API               string             // completion or chat
	Stages            []events.RateStage // open loop: Poisson arrivals at each rate for its duration
	ConcurrencyStages []events.ConcurrencyStage
	Input, Output     Distribution
	RequestTimeout    float64 // seconds, 0: none
	// Stream and IgnoreEOS are what an inline workload_yaml asks (api.streaming,
	// server.ignore_eos); the shipped workloads always stream with ignore_eos.
	Stream, IgnoreEOS bool
}

// namedWorkloads are our own renderings of the inference-perf profiles of llm-d-benchmark
// (reference/loadgen-eval-anchors.md §2).
var namedWorkloads = map[string]Workload{
	"sanity_random.yaml": {Name: "sanity_random.yaml", API: "completion", Stages: []events.RateStage{{Rate: 1, Duration: 30}},
		Input: Distribution{Min: 10, Max: 100, Mean: 50, StdDev: 10}, Output: Distribution{Min: 10, Max: 100, Mean: 50, StdDev: 10},
		RequestTimeout: 30, Stream: true, IgnoreEOS: true},
	"sanity_random_concurrent.yaml": {Name: "sanity_random_concurrent.yaml", API: "completion",
		ConcurrencyStages: []events.ConcurrencyStage{{Concurrency: 1, NumRequests: 32}, {Concurrency: 2, NumRequests: 64},
			{Concurrency: 4, NumRequests: 128}, {Concurrency: 8, NumRequests: 256}},
		Input: Distribution{Min: 5000, Max: 10000, Mean: 7500, StdDev: 1000}, Output: Distribution{Min: 500, Max: 1000, Mean: 750, StdDev: 100}, Stream: true, IgnoreEOS: true},
	"chatbot_synthetic.yaml": {Name: "chatbot_synthetic.yaml", API: "completion",
		Stages: []events.RateStage{{Rate: 1, Duration: 120}, {Rate: 2, Duration: 120}, {Rate: 4, Duration: 120}, {Rate: 8, Duration: 120}},
		Input:  Distribution{Min: 10, Max: 8192, Mean: 4096, StdDev: 2048}, Output: Distribution{Min: 10, Max: 2048, Mean: 1024, StdDev: 512}, Stream: true, IgnoreEOS: true},
	"summarization_synthetic.yaml": {Name: "summarization_synthetic.yaml", API: "completion",
		Stages: []events.RateStage{{Rate: 1, Duration: 120}, {Rate: 2, Duration: 120}, {Rate: 4, Duration: 120}, {Rate: 8, Duration: 120}},
		Input:  Distribution{Min: 10, Max: 4096, Mean: 2048, StdDev: 1024}, Output: Distribution{Min: 10, Max: 512, Mean: 256, StdDev: 128}, Stream: true, IgnoreEOS: true},
}

// NamedWorkload returns a workload shipped with Lensfn.
func NamedWorkload(name string) (Workload, bool) {
	w, ok := namedWorkloads[name]
	return w, ok
}

// NamedWorkloads lists the shipped workloads, sorted.
func NamedWorkloads() []string {
	names := make([]string, 0, len(namedWorkloads))
	for n := range namedWorkloads {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
