// Package inferencesim is Lensfn's vLLM-compatible inference simulator, a
// fasthttp function: OpenAI chat and text completions (streamed and not),
// models, LoRA load/unload, tokenize, embeddings, vLLM Prometheus metrics,
// failure injection, P/D disaggregation, data-parallel ranks, a prefix KV
// cache with ZMQ events (package kvcache), tool calls, SQLite response
// datasets and TLS.
//
// This package is the server on top: the ranks, the one route table
// (routes.go), the handlers and the generation of each request. Below it,
// by concern: internal/engine (admission and scheduling, the LoRA
// registry, KV cache accounting, failure injection) with
// internal/engine/textgen (dummy tokenizer, preset text, response lengths,
// the seeded generator), internal/config
// (flags, YAML, validation), internal/openai (the wire format: request
// types, error bodies, JSON encoding), internal/metrics (the vLLM metric
// set), internal/limits (the per-request bounds) and internal/pacer
// (absolute-deadline waits).
//
// Timing is exact by construction: a latency.Calculator produces each
// sequence's whole schedule once, and every token is sent at its absolute
// deadline (see internal/pacer): the first at admission + TTFT, each later
// one at the first token actually sent + the gaps before it.
//
// It owns the function's only use of fasthttp. It may import
// functions/inference-sim/internal/engine, functions/inference-sim/internal/engine/textgen,
// functions/inference-sim/internal/config, functions/inference-sim/internal/openai,
// functions/inference-sim/internal/metrics, functions/inference-sim/internal/limits,
// functions/inference-sim/internal/pacer, the latency core wasm-modules/latency
// (shared with the WASM guests), runtime/wasmhost (WASM calculators),
// the standard library, client_golang, zmq4 (through engine and kvcache) and the
// pure-Go SQLite driver; nothing else imports it except its cmd and tests/.
package inferencesim
