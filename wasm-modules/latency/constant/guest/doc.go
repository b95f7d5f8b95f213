// Command guest is the constant latency-calculator module: latency.Constant, the latency
// core's ConstantTTFT rule, behind the calculator ABI.
// Imports: the standard library, wasm-modules/internal/guest/calcguest and the latency core
// wasm-modules/latency.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
