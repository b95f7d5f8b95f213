// Command guest is the constant latency-calculator module.
// Imports: the standard library, wasm-modules/internal/guest/calcguest and its core
// package wasm-modules/latency/constant.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
