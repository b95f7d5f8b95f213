package inferencerouter

import (
	"container/list"
	"math/bits"
	"sync"
)

// blockIndex remembers, for each block hash, the set of replicas believed
// to hold it (a bit mask over a pool's replicas), bounded to capacity
// blocks with least-recently-used eviction. The approximate index learns
// from the router's own decisions; the precise one from KV events.
type blockIndex struct {
	mu       sync.Mutex
	capacity int
	blocks   map[uint64]*list.Element // of *indexEntry
	lru      *list.List               // front: most recently used
	evicted  uint64
}

type indexEntry struct {
	hash    uint64
	holders uint64
}

func newBlockIndex(capacity int) *blockIndex {
	return &blockIndex{capacity: capacity, blocks: make(map[uint64]*list.Element), lru: list.New()}
}

// match returns, for each replica in candidates, how many leading blocks of
// hashes it holds (matched[i] for replica i; matched must have room for
// every replica index) and the longest such run.
func (x *blockIndex) match(hashes []uint64, candidates uint64, matched []int) (longest int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	alive := candidates
	for i, h := range hashes {
		el, ok := x.blocks[h]
		if !ok {
			break
		}
		alive &= el.Value.(*indexEntry).holders
		if alive == 0 {
			break
		}
		for m := alive; m != 0; {
			r := bits.TrailingZeros64(m)
			m &^= 1 << r
			matched[r] = i + 1
		}
		longest = i + 1
	}
	x.touch(hashes[:longest])
	return longest
}

// add records that replica holds every block of hashes.
func (x *blockIndex) add(hashes []uint64, replica int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	// leaves first, so the chain's root ends most recently used and a
	// chain is evicted from its tail, as vLLM frees blocks
	for i := len(hashes) - 1; i >= 0; i-- {
		x.addLocked(hashes[i], replica)
	}
}

// touch marks a matched chain used, its root most recently.
func (x *blockIndex) touch(hashes []uint64) {
	for i := len(hashes) - 1; i >= 0; i-- {
		x.lru.MoveToFront(x.blocks[hashes[i]])
	}
}

func (x *blockIndex) addLocked(h uint64, replica int) {
	if el, ok := x.blocks[h]; ok {
		el.Value.(*indexEntry).holders |= 1 << replica
		x.lru.MoveToFront(el)
		return
	}
	for x.lru.Len() >= x.capacity {
		old := x.lru.Back()
		x.lru.Remove(old)
		delete(x.blocks, old.Value.(*indexEntry).hash)
		x.evicted++
	}
	x.blocks[h] = x.lru.PushFront(&indexEntry{hash: h, holders: 1 << replica})
}

// remove records that replica no longer holds the blocks.
func (x *blockIndex) remove(hashes []uint64, replica int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, h := range hashes {
		if el, ok := x.blocks[h]; ok {
			e := el.Value.(*indexEntry)
			e.holders &^= 1 << replica
			if e.holders == 0 {
				x.lru.Remove(el)
				delete(x.blocks, h)
			}
		}
	}
}

// clear forgets every block of replica.
func (x *blockIndex) clear(replica int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for el := x.lru.Front(); el != nil; {
		next := el.Next()
		e := el.Value.(*indexEntry)
		e.holders &^= 1 << replica
		if e.holders == 0 {
			x.lru.Remove(el)
			delete(x.blocks, e.hash)
		}
		el = next
	}
}

// len is the number of blocks indexed.
func (x *blockIndex) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lru.Len()
}
