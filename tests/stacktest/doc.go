// Package stacktest starts the local stack for tests and benchmarks that drive it as real
// processes (tests/e2e, tests/security, tests/bench/evalrun): the functions built from source
// once per test binary, a data dir of the test's own, the ingress on a free loopback port, and
// the built-in WASM modules unless Options.NoModules says the stack needs none. It imports deploy/local and the WASM test
// helpers, runtime/wasmhost/wasmtest.
package stacktest
