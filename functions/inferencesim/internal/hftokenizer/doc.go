// Package hftokenizer loads a Hugging Face tokenizer.json from a local file (nothing is ever
// downloaded) and serves it as the simulator's textgen.Tokenizer, so prompt lengths, context
// checks and KV block hashes follow a real model's tokenization. It wraps
// github.com/sugarme/tokenizer, a pure-Go implementation of the Hugging Face tokenizers
// pipeline (normalizers, pre-tokenizers, BPE / WordPiece / WordLevel models, post-processors),
// so the simulator keeps building without cgo.
//
// It may import functions/inferencesim/internal/engine/textgen, the standard library and
// github.com/sugarme/tokenizer.
package hftokenizer
