// Command guest is the weka_public_dataset module: the weka core behind the parser ABI.
// Imports: the standard library, wasm-modules/internal/guest/parserguest,
// wasm-modules/tracefmt, wasm-modules/abi and its core package wasm-modules/tracefmt/weka.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
