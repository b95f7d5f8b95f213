// Package inferencesim is Lensfn's vLLM-compatible inference simulator, a
// fasthttp function: OpenAI chat and text completions (streamed and not),
// models, LoRA load/unload, tokenize, embeddings, vLLM Prometheus metrics,
// failure injection, P/D disaggregation, data-parallel ranks, a prefix KV
// cache with ZMQ events (package kvcache), tool calls, SQLite response
// datasets and TLS.
//
// This package is the server on top: the ranks, the one route table
// (routes.go) and thin handlers that wire request -> engine -> writer: a
// generation request (genCtx) is decoded into an engine.Request, checked,
// admitted, generated and scheduled by the rank's engine.Generator, paced
// here (internal/pacer, and a watch on the client's connection) and written
// by internal/render, streamed (stream.go: genCtx is the body fasthttp reads)
// or whole. Below it, by concern: internal/engine (the request's parts,
// generation, admission and scheduling, the LoRA registry, KV cache
// accounting, failure injection) with internal/engine/textgen (dummy
// tokenizer, preset text, response lengths, the seeded generator),
// internal/render (the answers' bytes: bodies, SSE chunks, Responses events,
// usage, logprobs), internal/openai (the wire format on the way in: request
// types, decoding, error bodies, JSON encoding), internal/config (flags,
// YAML, validation), internal/metrics (the vLLM metric set),
// internal/limits (the per-request bounds) and internal/pacer
// (absolute-deadline waits). dataset.go opens the SQLite corpus (the driver
// and the download) for the engine's Dataset.
//
// Timing is exact by construction: a latency.Calculator produces each
// sequence's whole schedule once, and every token is sent at its absolute
// deadline (see internal/pacer): the first at admission + TTFT, each later
// one at the first token actually sent + the gaps before it.
//
// It owns the function's only use of fasthttp. It may import
// functions/inferencesim/internal/engine, functions/inferencesim/internal/engine/textgen,
// functions/inferencesim/internal/config, functions/inferencesim/internal/openai,
// functions/inferencesim/internal/metrics, functions/inferencesim/internal/limits,
// functions/inferencesim/internal/pacer, functions/inferencesim/internal/render,
// functions/inferencesim/internal/hftokenizer (--tokenizer),
// runtime/jsonstr (JSON strings), runtime/sockpeek (the watch on the client's connection),
// runtime/egress (which Host names /admin answers),
// runtime/enginemodel, runtime/kvblock and wasm-modules/stepcost (the engine model in real
// time, enginemode.go, over the prompt's block hashes, priced natively or by a step-cost module,
// its loop writing the streams' token chunks itself in directwrite.go),
// the latency core wasm-modules/latency
// (shared with the WASM guests), runtime/wasmhost (WASM calculators),
// the standard library, client_golang, zmq4 (through engine and kvcache), the
// pure-Go SQLite driver, and klog with logr (logging.go: klog's flags, as the
// reference's); nothing else imports it except its cmd and tests/.
package inferencesim
