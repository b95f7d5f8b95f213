// Package loadgen is the load-generation engine the trace replayer and the benchmark runner
// share: absolute-clock scheduling of requests (sessions and turns that wait on earlier turns),
// OpenAI-compatible requests with streaming response timing (TTFT, inter-token times), prompts
// synthesised from hash ids so shared prefixes stay shared, and per-request records streamed to a
// JSONL artifact as they complete.
//
// It imports only the standard library and events.
package loadgen
