package kvcache

import "github.com/lensfn/lensfn/runtime/kvblock"

// Hasher computes the chained block hashes (runtime/kvblock, shared with
// the router that looks requests up by them).
type Hasher = kvblock.Hasher

// NewHasher returns a hasher for blocks of blockSize tokens.
func NewHasher(blockSize int, hashSeed string) *Hasher { return kvblock.NewHasher(blockSize, hashSeed) }
