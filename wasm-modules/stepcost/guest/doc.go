// Command guest is the stepcost latency-calculator module: the step-cost core
// wasm-modules/stepcost behind the step_cost half of the calculator ABI (lens_step_time,
// lens_request_overhead), configured with stepcost.Config through lens_calc_configure.
// Imports: wasm-modules/internal/guest/stepcostguest and the step-cost core
// wasm-modules/stepcost.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (see wasm-modules/build.sh).
package main
