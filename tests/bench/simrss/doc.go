// Package simrss measures the inference simulator's peak memory under the hostile requests of
// issue 9: each request is sent to a fresh simulator process (functions/inferencesim, built and
// started as a real process on loopback) and the process's peak resident set (VmHWM of
// /proc/PID/status) is reported. The target is under 100 MB each; the figures and the exact
// command are in BENCHMARKS.md under "Inference simulator: hostile requests".
//
// As a test package under tests/ it may import anything in the module; it imports the
// standard library and tests/bench/benchkit, and runs the simulator as a separate process.
// Linux only (procfs).
package simrss
