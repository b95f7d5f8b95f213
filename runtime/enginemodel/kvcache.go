package enginemodel

// kvCache is vLLM's block pool: a fixed number of blocks, each with a reference count; free
// blocks wait in a queue (evicted from the front, the least recently freed first, tail blocks
// of a request before its head), and full prompt blocks stay findable by their hash until
// they are evicted, which is what a prefix-cache hit reuses.
type kvCache struct {
	blockSize int
	ref       []int32
	hash      []uint64 // 0: not cached
	prev      []int32  // free queue links; -1 ends
	next      []int32
	inFree    []bool
	head      int32 // first free block (evicted first), -1: none
	tail      int32
	free      int
	byHash    map[uint64]int32
	evictions int64
}

func newKVCache(blocks, blockSize int) *kvCache {
	c := &kvCache{blockSize: blockSize, ref: make([]int32, blocks), hash: make([]uint64, blocks),
		prev: make([]int32, blocks), next: make([]int32, blocks), inFree: make([]bool, blocks),
		head: -1, tail: -1, byHash: make(map[uint64]int32, 1024)}
	for b := int32(0); b < int32(blocks); b++ {
		c.pushFree(b)
	}
	return c
}

func (c *kvCache) total() int { return len(c.ref) }

func (c *kvCache) pushFree(b int32) {
	c.prev[b], c.next[b] = c.tail, -1
	if c.tail >= 0 {
		c.next[c.tail] = b
	} else {
		c.head = b
	}
	c.tail = b
	c.inFree[b] = true
	c.free++
}

func (c *kvCache) unlinkFree(b int32) {
	p, n := c.prev[b], c.next[b]
	if p >= 0 {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n >= 0 {
		c.prev[n] = p
	} else {
		c.tail = p
	}
	c.inFree[b] = false
	c.free--
}

// popFree takes the front of the free queue, evicting its cached hash.
func (c *kvCache) popFree() int32 {
	b := c.head
	c.unlinkFree(b)
	if h := c.hash[b]; h != 0 {
		if c.byHash[h] == b {
			delete(c.byHash, h)
		}
		c.hash[b] = 0
		c.evictions++
	}
	return b
}

// hits appends to dst the cached blocks of hashes' leading blocks, at most limit of them.
func (c *kvCache) hits(dst []int32, hashes []uint64, limit int) []int32 {
	for n := 0; n < len(hashes) && n < limit; n++ {
		b, ok := c.byHash[hashes[n]]
		if !ok {
			break
		}
		dst = append(dst, b)
	}
	return dst
}

// freeAfterTouch is how many blocks stay free once the cached blocks hit are taken.
func (c *kvCache) freeAfterTouch(hit []int32) int {
	f := c.free
	for _, b := range hit {
		if c.inFree[b] {
			f--
		}
	}
	return f
}

// touch takes a reference on the cached blocks hit, appending them to blocks.
func (c *kvCache) touch(blocks []int32, hit []int32) []int32 {
	for _, b := range hit {
		if c.inFree[b] {
			c.unlinkFree(b)
		}
		c.ref[b]++
	}
	return append(blocks, hit...)
}

// allocate appends n fresh blocks; the caller checked that n are free.
func (c *kvCache) allocate(blocks []int32, n int) []int32 {
	for ; n > 0; n-- {
		b := c.popFree()
		c.ref[b] = 1
		blocks = append(blocks, b)
	}
	return blocks
}

// cache makes block b findable by hash h, unless another block holds h already.
func (c *kvCache) cache(b int32, h uint64) {
	if h == 0 || c.hash[b] != 0 {
		return
	}
	if _, ok := c.byHash[h]; ok {
		return
	}
	c.hash[b] = h
	c.byHash[h] = b
}

// release drops a request's references, its tail blocks first, so they are evicted first.
func (c *kvCache) release(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		if c.ref[b]--; c.ref[b] == 0 {
			c.pushFree(b)
		}
	}
}

// usage is the share of blocks in use (referenced by a request), as vLLM reports it.
func (c *kvCache) usage() float64 {
	if len(c.ref) == 0 {
		return 0
	}
	return float64(len(c.ref)-c.free) / float64(len(c.ref))
}
