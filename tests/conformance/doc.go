// Package conformance runs every WASM module (the eight built-ins and the example user
// module) through the real host (runtime/wasmhost): exports and ABI version, descriptors
// and capabilities, guest output identical to the native Go core on the real traces in
// ../shared/traces and on small hand-written cases, schedules identical to the latency core's,
// step times identical to the step-cost core's (stepcost_test.go: catalogue models, TP sizes,
// batches, ABI.md's worked examples, refused configurations, user step-cost modules), traps,
// the memory cap, timeouts for user modules, and the benchmarks behind BENCHMARKS.md's "WASM
// plugins" section.
//
// Modules are built on demand by runtime/wasmhost/wasmtest (cached by source hash).
// Test-only misbehaving modules are written in WebAssembly text and need wat2wasm
// (Debian's wabt); without it those tests are skipped with that reason.
//
// Like everything under tests/, it may import anything in the module.
package conformance
