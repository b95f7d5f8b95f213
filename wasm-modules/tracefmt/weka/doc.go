// Package weka is the pure-Go core of the weka_public_dataset parser: WEKA/SemiAnalysis
// agentic-coding traces, one JSON trace object per file (or a JSONL stream of them), each
// with its own time origin and with subagent sessions (trace-formats.md 2.5).
//
// A trace is one root session: its first request arrives at its recorded t, later ones are
// delay-driven with AIPerf's default end-to-start delay max(0, (t_k - t_k-1) - api_time_k-1).
// A subagent marker becomes a child session "<trace id>/<agent id>" linked to the parent
// turn that spawns it and the one that waits for it; the waiting turn carries the recorded gap
// after the subagents' end (JoinDelayMs). A range selects turns on each trace's clock, so the
// module applies it itself (NewWindowed, TraceRange) and keeps every link pointing at a turn
// that is there. Each trace (tens of KB to a few MB) is
// buffered until its closing brace and decoded with encoding/json, which also gives
// AIPerf's strictness about unknown keys for free; a JSONL corpus of many traces streams
// in the memory of its largest trace.
//
// Imports: the standard library, wasm-modules/abi and wasm-modules/tracefmt.
package weka
