// Package tracefmt holds what every trace-format parser core shares: the Parser contract
// (feed chunks, end, emit normalised abi.TraceRequest records), a line splitter that keeps
// memory flat on million-line files, and ParseFile for native use in tests and tools.
//
// The cores live in the sub-packages (mooncake, bailian, baseten, burstgpt, weka), each with
// a guest/ main that runs the same core as a wasip1 module. Imports: the standard library and
// wasm-modules/abi (baseten also uses parquet-go).
package tracefmt
