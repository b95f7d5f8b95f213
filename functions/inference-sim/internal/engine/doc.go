// Package engine is the simulator's serving state below the HTTP layer, the parts a
// request passes through between decoding and the first byte of its answer:
//
//   - admission (admission.go): the Scheduler, at most max-num-seqs running, a bounded FIFO
//     queue (429 when full), max-loras adapter slots with waiting requests for a loaded
//     adapter first, and the shutdown that rejects the queue;
//   - the LoRA registry (lora.go): the adapters a rank knows, bounded, with the ids KV
//     events carry;
//   - KV cache accounting (kv.go): pinning a prompt's blocks at admission and unpinning
//     them at the end, over package kvcache, with the usage gauge;
//   - failure injection (failures.go): --failure-injection-rate and --failure-types.
//
// It knows nothing of fasthttp or of the request's wire format beyond the error bodies:
// the root package decodes (internal/openai), asks the engine, and paces and encodes the
// answer (internal/pacer). Metrics reach it only as callbacks (Hooks, NewKV's usage).
//
// It may import functions/inference-sim/internal/config, functions/inference-sim/internal/limits,
// functions/inference-sim/internal/openai, functions/inference-sim/kvcache, wasm-modules/splitmix
// and the standard library.
package engine
