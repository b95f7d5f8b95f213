// Package inferencesim is Lensfn's vLLM-compatible inference simulator, a
// fasthttp function: OpenAI chat and text completions (streamed and not),
// models, LoRA load/unload, tokenize, embeddings, vLLM Prometheus metrics,
// failure injection, P/D disaggregation, data-parallel ranks, a prefix KV
// cache with ZMQ events (package kvcache), tool calls, SQLite response
// datasets and TLS.
//
// Timing is exact by construction: a latency.Calculator produces each
// sequence's whole schedule once, and every token is sent at its absolute
// deadline (see internal/pacer): the first at admission + TTFT, each later one at
// the first token actually sent + the gaps before it.
//
// It owns the function's only use of fasthttp. It may import
// functions/inference-sim/kvcache, the latency core wasm-modules/latency and
// wasm-modules/splitmix (the pure cores, shared with the WASM guests),
// runtime/wasmhost (WASM calculators), runtime/jsoncursor (its fast request
// decoder), the standard library, client_golang, zmq4 (through kvcache),
// yaml.v3 and the pure-Go SQLite driver; nothing else imports it except
// its cmd and tests/.
package inferencesim
