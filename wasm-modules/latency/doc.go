// Package latency is the one latency core of Lensfn: the simulator's latency flags (one
// list, DurationFlags, from which the command line and a module's configuration JSON are
// derived), the one Input type, the Calculator interface, the load factor, deterministic
// jitter, the TTFT rules of the built-in calculators (constant, per-token and the legacy
// automatic choice) and Schedule, which fills a request's TTFT and every inter-token gap
// in one go.
//
// The simulator imports it natively for its built-in calculators; the two built-in modules
// (Constant, PerToken) are its rules with a descriptor, and constant/guest and
// pertoken/guest serve them through the calculator ABI. runtime/wasmhost's Calculator
// implements the same interface, so a module and a built-in are interchangeable and give
// the same schedule for one seed.
//
// Arithmetic is plain float64 (+ - * / and sqrt, which IEEE-754 rounds exactly) with our
// own logarithm, so the native core and the wasip1 guest give bit-identical schedules for
// the same input.
//
// Imports: the standard library, wasm-modules/splitmix and wasm-modules/abi only (the other
// pure cores: it is one of the three every layer may import; see RATIONALE.md, "The latency
// core's home").
package latency
