package enginemodel

// Segment is a run of prompt tokens whose content one key names: equal keys and offsets mean
// equal tokens (a group's system prompt, one prompt's question, a trace's hash block).
type Segment struct {
	Key    uint64
	Tokens int
}

func mix(h, v uint64) uint64 {
	h ^= v + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 29
	return h
}

// PromptBlocks appends to dst the chained hashes of the full blockSize-token blocks of a
// prompt made of segs, as vLLM hashes a prompt's blocks: each block's hash covers its own
// tokens and, through its parent's hash, every token before it. A prompt that shares the
// first k blocks' tokens with another shares their k hashes, and no others. Hashes are never 0.
func PromptBlocks(dst []uint64, segs []Segment, blockSize int) []uint64 {
	parent := uint64(0x5a17)
	seg, off := 0, 0 // position: segment index and tokens into it
	for {
		h, need := parent, blockSize
		for need > 0 && seg < len(segs) {
			take := min(need, segs[seg].Tokens-off)
			if take > 0 {
				h = mix(mix(mix(h, segs[seg].Key), uint64(off)), uint64(take))
				need -= take
				off += take
			}
			if off >= segs[seg].Tokens {
				seg, off = seg+1, 0
			}
		}
		if need > 0 {
			return dst
		}
		if h == 0 {
			h = 1
		}
		dst = append(dst, h)
		parent = h
	}
}
