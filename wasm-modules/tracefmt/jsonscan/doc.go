// Package jsonscan is a small, allocation-free JSON scanner for one JSON object per call,
// written for the trace parsers' hot path: reflection-based encoding/json ran at ~51k
// lines/s inside a wazero guest, far below the 120k lines/s the Mooncake parser needs.
//
// It knows only what the parsers need (objects, numbers, strings, integer arrays, raw
// values) and imports only the standard library.
package jsonscan
