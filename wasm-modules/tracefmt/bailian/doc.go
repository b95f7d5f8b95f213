// Package bailian is the pure-Go core of the bailian_trace parser (Alibaba Bailian JSONL:
// seconds since trace start, 16-token hash blocks, conversations linked by parent_chat_id;
// trace-formats.md 2.2). It scans lines with jsonscan.
//
// Sessions are found by walking parent_chat_id to the root while streaming, so a parent
// must appear before its children (true of time-ordered traces); a row whose parent was
// not seen starts its own session, as in AIPerf. The only state kept per row is its root
// id (16 bytes per row).
//
// Imports: the standard library, wasm-modules/abi, wasm-modules/tracefmt and wasm-modules/tracefmt/jsonscan.
package bailian
