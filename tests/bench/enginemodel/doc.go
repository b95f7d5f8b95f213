// Package enginemodel benchmarks the simulator's engine model in real time: one simulator
// process serving 16 data-parallel replicas of Llama-2-7B on H100 at the load the real
// measurements show one such replica sustaining, and the process's CPU per second of serving
// (BENCHMARKS.md, "Engine model"). It may import anything (it is under tests/).
package enginemodel
