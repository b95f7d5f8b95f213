// Package latency is the shared core of the latency calculators: the simulator's latency
// flags (configuration JSON under their flag names), the load factor, deterministic
// jitter, and Schedule, which fills a request's TTFT and every inter-token gap in one go.
// The constant and pertoken sub-packages pick how TTFT is computed; each has a guest/
// main that exposes it through the calculator ABI.
//
// Arithmetic is plain float64 (+ - * / and sqrt, which IEEE-754 rounds exactly) with our
// own logarithm, so the native core and the wasip1 guest give bit-identical schedules for
// the same input. Imports: the standard library only.
package latency
