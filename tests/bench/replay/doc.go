// Package replay benchmarks the load-generation engine (runtime/loadgen) replaying a synthetic
// constant-rate schedule against the inference simulator (functions/inferencesim, built and
// started as a real process) on loopback: schedule drift percentiles and achieved rate. The
// figures and the exact command are in BENCHMARKS.md under "Trace replay".
//
// As a test package under tests/ it may import anything in the module; it imports
// runtime/loadgen, tests/bench/benchkit and the standard library and runs the simulator as a
// separate process.
package replay
