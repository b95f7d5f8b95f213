// Package mooncake is the pure-Go core of the mooncake_trace parser (JSONL, one request per
// line, times in ms; trace-formats.md 2.1). It scans lines with jsonscan, never with
// reflection, and reuses one record so a million-line trace parses in flat memory.
//
// Imports: the standard library, wasm-modules/abi, wasm-modules/tracefmt and wasm-modules/tracefmt/jsonscan.
// guest/ wraps it as the mooncake_trace wasip1 module.
package mooncake
