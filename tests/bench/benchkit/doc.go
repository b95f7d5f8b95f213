// Package benchkit holds what the benchmarks under tests/bench share: the simulator binary
// (LENS_SIM_BIN or a fresh build), free loopback ports, LENS_* knobs read as positive numbers,
// the nearest-rank percentile, and the process's own CPU time. It may import only the standard
// library (and testing).
package benchkit
