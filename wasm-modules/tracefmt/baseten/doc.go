// Package baseten is the pure-Go core of the baseten_trace parser: Baseten completion
// logs in Parquet (trace-formats.md 2.3), read with parquet-go. Parquet needs random
// access, so a source is buffered whole and decoded at End; the module's memory limit
// bounds the file size it accepts.
//
// Times are re-based to the earliest timestamp_start_unix_ms (as AIPerf does); rows are
// emitted in time order (file order breaks ties); sessions come from provided_session_id,
// else poor_man_session_id, else each row is its own session. Every row carries its
// literal prompt and an arrival time (open loop: a later turn fires at max(arrival,
// previous turn done)). An output of 0 (a cancelled request) is raised to 1.
//
// Imports: the standard library, parquet-go, wasm-modules/abi and wasm-modules/tracefmt.
package baseten
