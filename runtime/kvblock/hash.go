package kvblock

import "encoding/binary"

// FNV-64a.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnv64a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// appendCBORHead appends a canonical (shortest) CBOR head.
func appendCBORHead(dst []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(dst, m|byte(n))
	case n <= 0xff:
		return append(dst, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), n)
}

// Hasher computes chained block hashes: the hash of a block is FNV-64a
// of the canonical CBOR encoding of [parent, tokens, extra]; the chain of
// a model starts at the hash of [FNV-64a(hash seed), null, model name], so
// different models (and LoRA adapters) never share blocks.
type Hasher struct {
	blockSize int
	seedHash  uint64
	buf       []byte
}

// NewHasher returns a hasher for blocks of blockSize tokens.
func NewHasher(blockSize int, hashSeed string) *Hasher {
	return &Hasher{blockSize: blockSize, seedHash: fnv64a(fnvOffset64, []byte(hashSeed))}
}

// Root is the parent hash of a model's first block.
func (h *Hasher) Root(model string) uint64 {
	b := append(h.buf[:0], 0x83)
	b = appendCBORHead(b, 0, h.seedHash)
	b = append(b, 0xf6)
	b = appendCBORHead(b, 3, uint64(len(model)))
	b = append(b, model...)
	h.buf = b
	return fnv64a(fnvOffset64, b)
}

// Block hashes one block given its parent's hash.
func (h *Hasher) Block(parent uint64, tokens []uint32) uint64 {
	b := append(h.buf[:0], 0x83)
	b = appendCBORHead(b, 0, parent)
	b = appendCBORHead(b, 4, uint64(len(tokens)))
	for _, t := range tokens {
		b = appendCBORHead(b, 0, uint64(t))
	}
	b = append(b, 0xf6)
	h.buf = b
	return fnv64a(fnvOffset64, b)
}

// AppendBlockHashes appends the hashes of every full block of tokens (a
// partial tail block is not cached). A Hasher is not safe for concurrent
// use.
func (h *Hasher) AppendBlockHashes(dst []uint64, model string, tokens []uint32) []uint64 {
	parent := h.Root(model)
	for i := 0; i+h.blockSize <= len(tokens); i += h.blockSize {
		parent = h.Block(parent, tokens[i:i+h.blockSize])
		dst = append(dst, parent)
	}
	return dst
}
