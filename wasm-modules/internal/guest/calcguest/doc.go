// Package calcguest exports the latency-calculator half of the ABI (lens_calc_configure,
// lens_calc_schedule) around a latency.Model. Imports: the standard library,
// wasm-modules/abi, wasm-modules/latency, wasm-modules/internal/guest.
package calcguest
