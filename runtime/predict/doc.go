// Package predict runs a benchmark workload through the engine model in virtual time: it
// reads the benchmark runner's own request schedules (runtime/workload), turns each request's
// prompt into the block hashes the engine's prefix cache matches (the same structure the
// load generator's synthesised prompts have: shared hash blocks, then the request's tail),
// runs runtime/enginemodel's Predict and summarises each stage as a benchmark run reports it.
// lensctl predict and the fidelity harness (tests/fidelity) are its users.
//
// It imports events, runtime/enginemodel, runtime/evalrun, runtime/loadgen and runtime/workload.
package predict
