// Package kvcache owns the simulator's prefix KV cache: chained block
// hashes of prompt tokens (FNV-64a over canonical CBOR, as llm-d's
// kv-block indexer computes them), a ref-counted block store with LRU
// eviction of unused blocks, and the KV events (BlockStored,
// BlockRemoved, AllBlocksCleared) published over ZMQ in vLLM's msgpack
// batch layout, so KV-aware routers can index the simulator.
//
// The hash function itself is runtime/kvblock's, shared with the router
// that looks requests up by these hashes. It imports the standard library,
// runtime/kvblock and github.com/go-zeromq/zmq4 (the pure-Go ZMQ
// implementation; its other home is the router's KV-event subscriber).
package kvcache
