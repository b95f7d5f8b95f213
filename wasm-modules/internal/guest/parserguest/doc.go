// Package parserguest exports the trace-parser half of the ABI (lens_parse_begin,
// lens_parse_feed, lens_parse_end) around a tracefmt.Parser core. Imports: the standard
// library, wasm-modules/abi, wasm-modules/tracefmt, wasm-modules/internal/guest.
package parserguest
