// Package textgen is what the simulator generates text from: the reference simulator's
// dummy tokenizer (token strings, counts and ids, hand-written because it runs on every
// request), its preset sentences and response-length distributions for random mode, and
// the request's seeded generator (RNG, a SplitMix64, so one seed reproduces an answer).
//
// It may import wasm-modules/splitmix (the one SplitMix64, shared with the latency core)
// and the standard library.
package textgen
