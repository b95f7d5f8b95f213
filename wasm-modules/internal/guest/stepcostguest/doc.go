// Package stepcostguest exports the step-cost half of the ABI (lens_calc_configure with a
// step-cost configuration, lens_step_time, lens_request_overhead) around a stepcost.Model.
// A step-cost module exports no lens_calc_schedule: it prices engine steps, not whole
// requests. Imports: the standard library, wasm-modules/abi, wasm-modules/stepcost,
// wasm-modules/internal/guest.
package stepcostguest
