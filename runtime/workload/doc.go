// Package workload is the benchmark runner's request schedules: what each request of a run
// sends and when, built lazily per request index so a stage of a million requests costs a few
// bytes each (arrival offsets), never the prompts. Fixed is a matrix point's closed loop,
// Lengths a named workload's closed-loop stage, Named a named workload's Poisson rate stages,
// SharedPrefix a shared-prefix workload as inference-perf lays it out, and RateStages the
// Poisson clock they share. The benchmark runner sends them; the engine model's predictor
// (lensctl predict, the fidelity harness) reads the same schedules, so a prediction and a run
// of one seed see the same requests.
//
// It imports events, runtime/evalrun (workload definitions) and runtime/loadgen (the request
// type).
package workload
