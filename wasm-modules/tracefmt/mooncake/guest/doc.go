// Command guest is the mooncake_trace module: the mooncake core behind the parser ABI.
// Imports: the standard library, wasm-modules/internal/guest/parserguest,
// wasm-modules/tracefmt, wasm-modules/abi and its core package wasm-modules/tracefmt/mooncake.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
