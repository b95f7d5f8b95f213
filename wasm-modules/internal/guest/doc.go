// Package guest is the wasip1 side of the ABI shared by every Go module: the exports all
// modules have (lens_abi_version, lens_describe, lens_buffer, lens_error) and the buffers
// behind them. parserguest and calcguest add the kind-specific exports; a module's guest
// main imports exactly one of them, so a parser never exports calculator functions.
//
// A reactor module (-buildmode=c-shared) runs package initialisers from _initialize but
// never main, so guest mains wire their core in init. Imports: the standard library and
// wasm-modules/abi. It builds natively too, where the exports are ordinary functions.
package guest
