// Package evalrun benchmarks the benchmark-runner's side of issue 12 against the inference
// simulator (functions/inferencesim, built and started as a real process on loopback):
//
//   - BenchmarkClosedLoop: one client holds 4,096 requests in flight (a closed loop) and the
//     client's CPU per request is measured over a steady window; the clients are the runner's
//     engine (runtime/loadgen, with the runner's per-record work: metrics builders and the JSONL
//     artifact), streamed and not, and k6 and vegeta doing the same non-streamed work as child
//     processes when they are on the PATH.
//   - BenchmarkPoissonStage: the engine sends an open-loop Poisson rate stage (5,000 req/s
//     streamed for 30 s by default): schedule delay percentiles and the achieved rate.
//   - BenchmarkRunnerStack: the benchmark-runner function itself, on the local stack
//     (tests/stacktest) with inventory-api and evaluation-api, driven over HTTP: a
//     100,000-request run with the runner process's peak RSS (VmHWM) and CPU, and the
//     orchestration overhead of small runs (queued to first request, last request to
//     succeeded) from the run record's timestamps and the per-request records.
//
// The figures and the exact commands are in BENCHMARKS.md under "Benchmark runs". Every
// server and client it starts is stopped when its benchmark ends.
//
// As a test package under tests/ it may import anything in the module; it imports
// runtime/loadgen, runtime/evalrun, tests/stacktest, tests/bench/benchkit and the standard
// library, and runs
// the simulator, k6 and vegeta as separate processes. Linux only (procfs, getrusage).
package evalrun
