// Package wasmbuild tests wasm-modules/build.sh as the Makefile runs it: `make wasm-first`
// (--defer baseten_trace: seven modules and a pending entry), lensfn-local's background build
// (--only baseten_trace), `make wasm` (all eight), the per-module source stamps that make a
// warm run build nothing, and a failed build written into the manifest.
//
// Like everything under tests/, it may import anything in the module.
package wasmbuild
