// Command guest is the per-token latency-calculator module.
// Imports: the standard library, wasm-modules/internal/guest and its core package.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
