// Package latency owns the simulator's latency models: the Calculator
// interface that turns one request into its whole timing schedule (time to
// first token plus one gap per further token), and the two built-in models
// of the specification, "constant" and "per-token", with their std-dev
// clamping and time-factor-under-load.
//
// A calculator is called once per generated sequence, never per token, so
// an implementation may be expensive (for example a WebAssembly module run
// through runtime/wasmhost, wired in by the lead behind this interface).
//
// It imports only the standard library.
package latency
