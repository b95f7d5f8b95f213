// Package abi is the Go half of the Lensfn WebAssembly plugin ABI (the prose half is
// ../ABI.md): export names, the ABI version, the module descriptor, the packed ptr/len
// return convention, the binary encoding of normalised trace request records, and
// lens_step_time's arguments with the worked step-cost examples of ABI.md section 8.1.
//
// The host (runtime/wasmhost) and every Go guest share it. It is one of the pure cores every
// layer may import: it imports only the standard library and must stay buildable for
// GOOS=wasip1.
package abi
