// Command guest is the burst_gpt_trace module: the burstgpt core behind the parser ABI.
// Imports: the standard library, wasm-modules/internal/guest and its core package.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
