// Package wasmtest builds the WASM modules for tests on demand: it runs
// wasm-modules/build.sh once per source state and caches the result under the user cache
// directory, keyed by a hash of the module sources (Go, WebAssembly text, build.sh under
// wasm-modules/), go.mod, go.sum and the Go version, so
// repeated test runs start in milliseconds. Built modules are never committed. UserCopy
// makes a copy of a built-in into a user module directory (with its manifest).
//
// Imports: the standard library only. It is test support for the host's tests and the
// conformance suite.
package wasmtest
