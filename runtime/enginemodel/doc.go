// Package enginemodel is a model of vLLM's serving loop (its V1 engine): continuous batching
// step by step, a paged KV cache with prefix caching, preemption by recomputation, and each
// step's duration from a step-cost model. One Engine runs under two clocks: the simulator's
// real-time driver sleeps through each step and streams the tokens it produced, and Predict
// runs a whole workload in virtual time, far faster than real time.
//
// It owns:
//   - Engine (engine.go): the scheduler of vLLM V1 (running requests first, each a decode or
//     the next prefill chunk, then waiting requests in order within max_num_batched_tokens and
//     max_num_seqs; out of KV blocks, the latest running request is preempted and recomputed
//     later), the Seq each request is, the Batch a step computes and the engine's counters;
//   - the KV cache (kvcache.go): block_size-token blocks with reference counts, a free queue
//     evicted least recently freed first, and the hash -> block map of full prompt blocks that
//     gives prefix-cache hits;
//   - PromptBlocks (blocks.go): the chained block hashes of a prompt made of segments;
//   - Predict (predict.go): a workload of arrivals through the engine in virtual time, with
//     the per-request results and the summary a benchmark run reports.
//
// It knows nothing of HTTP, pacing or metrics exposition: the simulator wraps it.
//
// Imports: the standard library and the pure core wasm-modules/stepcost (the step-cost model,
// the model and GPU catalogues).
package enginemodel
