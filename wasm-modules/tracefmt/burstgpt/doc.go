// Package burstgpt is the pure-Go core of the burst_gpt_trace parser (BurstGPT CSV with a
// header row; Timestamp in seconds from midnight of day one; trace-formats.md 2.4). Every
// row is its own single-turn session. A row with "Response tokens" 0 (a failed request in
// the _1/_2/_3 files) is kept and its output raised to 1, like AIPerf's Baseten and WEKA
// loaders; the metadata records the original 0.
//
// Imports: the standard library, wasm-modules/abi and wasm-modules/tracefmt.
package burstgpt
