// Package splitmix is the module's one SplitMix64: the small, allocation-free generator
// behind every reproducible draw (the latency calculators' jitter, the simulator's text
// and failures, the load generator's run ids). It is compiled into WASM guests as well as
// native code, so it is pure integer arithmetic that gives the same bits everywhere.
//
// Imports: nothing but the standard library (it is a leaf shared by every layer; see
// RATIONALE.md, "The latency core's home").
package splitmix
