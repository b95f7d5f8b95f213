// Package benchkit holds what the benchmarks under tests/bench share: the simulator's (or any
// command's) binary (LENS_SIM_BIN or a fresh build), free loopback ports, LENS_* knobs read as
// positive numbers, the nearest-rank percentile, the CPU time of the process itself or of a
// child it runs, and the host's steal share over a span (what a shared VM's neighbours took, so
// a noisy sitting shows as one). It may import the standard library, testing and
// runtime/wasmhost/wasmtest (RepoRoot, the one go.mod finder of the tests).
package benchkit
