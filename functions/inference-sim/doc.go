// Package inferencesim is Lensfn's vLLM-compatible inference simulator, a
// fasthttp function: OpenAI chat and text completions (streamed and not),
// models, LoRA load/unload, tokenize, embeddings, vLLM Prometheus metrics,
// failure injection, P/D disaggregation, data-parallel ranks, a prefix KV
// cache with ZMQ events (package kvcache), tool calls, SQLite response
// datasets and TLS.
//
// Timing is exact by construction: a latency.Calculator produces each
// sequence's whole schedule once, and every token is sent at its absolute
// deadline (see pacer.go).
//
// It owns the function's only use of fasthttp. It may import its own
// sub-packages (latency, kvcache), the standard library, client_golang,
// zmq4 (through kvcache), yaml.v3 and the pure-Go SQLite driver; nothing
// outside functions/inference-sim imports it except tests/.
package inferencesim
