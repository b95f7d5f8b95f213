// Command guest is the per-token latency-calculator module: latency.PerToken, the latency
// core's PerTokenTTFT rule, behind the calculator ABI.
// Imports: the standard library, wasm-modules/internal/guest/calcguest and the latency core
// wasm-modules/latency.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
