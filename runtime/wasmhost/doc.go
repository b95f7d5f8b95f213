// Package wasmhost runs Lensfn's WebAssembly plugins (trace-format parsers and latency
// calculators, ABI in wasm-modules/ABI.md) on wazero. It is the only package that imports
// wazero.
//
// It owns: reading module manifests and checking each module's sha256; compiling every
// module once through an on-disk compilation cache (once per machine: hosts sharing a cache
// take a per-module flock while compiling), in the background when asked (Open), with each
// module's state (building, compiling, ready, failed) and a CompilingError naming a module a
// caller needs before it is ready; modules a manifest lists as pending (a build still under
// way: make run builds the Baseten parser behind the first answer), re-reading the manifest
// until it pins them and loading them then with the same sha256 check; refusing a module whose ABI version,
// exports or descriptor do not fit, at load time; a bounded pool of instances per module
// (an instance is never shared between goroutines and is discarded after any error or when
// its memory has grown large); memory limits; and per-call timeouts for user modules only
// (interrupting guest code costs ~7x on Go guests, so built-ins run without it).
//
// Calculators come as Calculator (a request's whole schedule, latency.Calculator) and as
// StepCost (a step_cost module: one engine step's duration, the engine model's StepCoster).
//
// Imports: the standard library, wazero, wasm-modules/abi, wasm-modules/latency (the latency
// core, for its one Input type and Calculator interface) and wasm-modules/stepcost (the
// step-cost core, for its Batch and Config).
package wasmhost
