// Package engine is the simulator's serving state and generation below the HTTP layer,
// everything a request passes through between its decoded body and the bytes of its answer:
//
//   - the request (request.go): Request, in parts a reader can hold, each with its own
//     methods: the wire body (openai.Body), Params (params.go: lengths, n, logprobs,
//     streaming, P/D), Tools (tools.go), Prompt (prompt.go: the tokenized prompts and the
//     context window), Admission, and the Sequences (sequence.go), each with its Timeline
//     (the calculator's schedule) and its Cursor (where its stream stands);
//   - generation (generate.go): the Generator's steps, Check (parameters, prompts, the
//     output budget of budget.go), Start (the prefix cache), Generate (echo, dataset,
//     preset or tool-call tokens), Schedule (the latency calculator) and Finish; tool-call
//     arguments from the tools' JSON schemas (tools.go); dataset-backed responses
//     (dataset.go, over a *sql.DB the caller opens); the reproducible ids and logprobs
//     (identity.go) and the embeddings' vectors (embed.go);
//   - admission (admission.go): the Scheduler, at most max-num-seqs running, a bounded FIFO
//     queue (429 when full), max-loras adapter slots with waiting requests for a loaded
//     adapter first, and the shutdown that rejects the queue;
//   - the LoRA registry (lora.go): the adapters a rank knows, bounded, with the ids KV
//     events carry;
//   - KV cache accounting (kv.go): pinning a prompt's blocks at admission and unpinning
//     them at the end, over package kvcache, with the usage gauge;
//   - failure injection (failures.go): --failure-injection-rate and --failure-types.
//
// It knows nothing of fasthttp, of pacing or of how an answer is written: the root package
// decodes into Request.Wire, runs the Generator, waits with internal/pacer, and hands the
// request to internal/render. Metrics reach it only as callbacks (Hooks, NewKV's usage);
// it shares the finish reasons' names with internal/metrics.
//
// It may import functions/inferencesim/internal/config, functions/inferencesim/internal/engine/textgen,
// functions/inferencesim/internal/limits, functions/inferencesim/internal/metrics (the finish
// reasons), functions/inferencesim/internal/openai, functions/inferencesim/kvcache,
// wasm-modules/latency (the calculator's input), wasm-modules/splitmix, runtime/jsonstr (tool
// call arguments' strings) and the standard library.
package engine
