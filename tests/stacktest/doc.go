// Package stacktest starts the local stack for tests that drive it as real processes (tests/e2e,
// tests/security): the functions built from source once per test binary, a data dir of the
// test's own, the ingress on a free loopback port. It imports deploy/local and the WASM test
// helpers, runtime/wasmhost/wasmtest.
package stacktest
