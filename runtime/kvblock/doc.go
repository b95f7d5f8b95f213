// Package kvblock owns the prefix-cache block hash that vLLM-compatible KV events name: FNV-64a
// over the canonical CBOR encoding of [parent, tokens, extra], chained from a root derived from
// the hash seed and the model, as llm-d's kv-block indexer computes it. The simulator's KV cache
// (functions/inferencesim/kvcache) stores and publishes blocks under these hashes and the
// router's precise-prefix profile (functions/inferencerouter) looks requests up by them, so
// both must compute exactly the same function: this is its one copy.
//
// It imports only the standard library.
package kvblock
