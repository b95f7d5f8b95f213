// Package benchkit holds what the benchmarks under tests/bench share: the simulator binary
// (LENS_SIM_BIN or a fresh build), free loopback ports, LENS_* knobs read as positive numbers,
// the nearest-rank percentile, and the process's own CPU time. It may import the standard library,
// testing and runtime/wasmhost/wasmtest (RepoRoot, the one go.mod finder of the tests).
package benchkit
