// Package limits holds the bounds that keep any single request (or admin update) from
// exhausting the simulator, and the checks of the settings they bound (latencies, LoRA
// names and paths, tokens, host names); README "Limits" lists them.
//
// It may import wasm-modules/latency (the flags it bounds) and the standard library.
package limits
