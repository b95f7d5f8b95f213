package kvcache

import (
	"container/list"
	"errors"
	"sync"
)

// ErrCacheFull means a request's blocks do not fit even after evicting
// every unused block.
var ErrCacheFull = errors.New("KV cache is full: not enough free blocks for the request")

// Event is one KV-cache event.
type Event struct {
	Kind      EventKind
	Hashes    []uint64
	Parent    uint64 // BlockStored: hash of the parent block, 0 for none
	Tokens    []uint32
	BlockSize int
	LoRAID    int    // 0: base model
	LoRAName  string // empty: base model
}

// EventKind names the vLLM event types.
type EventKind uint8

const (
	BlockStored EventKind = iota + 1
	BlockRemoved
	AllBlocksCleared
)

func (k EventKind) String() string {
	switch k {
	case BlockStored:
		return "BlockStored"
	case BlockRemoved:
		return "BlockRemoved"
	}
	return "AllBlocksCleared"
}

// Sink receives events (a Publisher, or a test recorder).
type Sink interface{ Publish(Event) }

type block struct {
	hash uint64
	refs int
	lru  *list.Element // set while unused
}

// Cache is a ref-counted block store: blocks used by running requests
// are pinned; unused blocks stay cached until evicted, oldest first.
type Cache struct {
	mu        sync.Mutex
	capacity  int
	blockSize int
	blocks    map[uint64]*block
	unused    *list.List // of *block, front = oldest
	used      int
	sink      Sink
	hasher    *Hasher
}

// New returns a cache of capacity blocks of blockSize tokens.
func New(capacity, blockSize int, hashSeed string, sink Sink) *Cache {
	return &Cache{capacity: capacity, blockSize: blockSize, blocks: map[uint64]*block{},
		unused: list.New(), sink: sink, hasher: NewHasher(blockSize, hashSeed)}
}

// BlockSize is the number of tokens per block.
func (c *Cache) BlockSize() int { return c.blockSize }

// Hashes appends the block hashes of tokens for model.
func (c *Cache) Hashes(dst []uint64, model string, tokens []uint32) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hasher.AppendBlockHashes(dst, model, tokens)
}

// Start pins the blocks of a starting request and returns how many
// leading blocks were already cached (the prefix-cache hit).
func (c *Cache) Start(hashes []uint64, tokens []uint32, loraID int, loraName string) (cachedBlocks int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	missing := 0
	prefix := true
	for _, h := range hashes {
		if _, ok := c.blocks[h]; ok {
			if prefix {
				cachedBlocks++
			}
		} else {
			prefix = false
			missing++
		}
	}
	if free := c.capacity - len(c.blocks); missing > free {
		if missing > c.capacity-c.used {
			return 0, ErrCacheFull
		}
		c.evict(missing - free)
	}
	var stored []uint64
	parent, firstNew := uint64(0), -1
	for i, h := range hashes {
		b, ok := c.blocks[h]
		if !ok {
			b = &block{hash: h}
			c.blocks[h] = b
			if firstNew < 0 {
				firstNew = i
				if i > 0 {
					parent = hashes[i-1]
				}
			}
			stored = append(stored, h)
		}
		if b.refs == 0 {
			if b.lru != nil {
				c.unused.Remove(b.lru)
				b.lru = nil
			}
			c.used++
		}
		b.refs++
	}
	if len(stored) > 0 && c.sink != nil {
		toks := tokens[firstNew*c.blockSize : (firstNew+len(stored))*c.blockSize]
		c.sink.Publish(Event{Kind: BlockStored, Hashes: stored, Parent: parent, Tokens: append([]uint32(nil), toks...),
			BlockSize: c.blockSize, LoRAID: loraID, LoRAName: loraName})
	}
	return cachedBlocks, nil
}

func (c *Cache) evict(n int) {
	var removed []uint64
	for ; n > 0; n-- {
		e := c.unused.Front()
		if e == nil {
			break
		}
		b := c.unused.Remove(e).(*block)
		delete(c.blocks, b.hash)
		removed = append(removed, b.hash)
	}
	if len(removed) > 0 && c.sink != nil {
		c.sink.Publish(Event{Kind: BlockRemoved, Hashes: removed})
	}
}

// Finish unpins a finished request's blocks; they stay cached, unused.
func (c *Cache) Finish(hashes []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hashes {
		b, ok := c.blocks[h]
		if !ok || b.refs == 0 {
			continue
		}
		b.refs--
		if b.refs == 0 {
			c.used--
			b.lru = c.unused.PushBack(b)
		}
	}
}

// Clear drops every unused block and announces AllBlocksCleared.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.unused.Front(); e != nil; e = c.unused.Front() {
		b := c.unused.Remove(e).(*block)
		delete(c.blocks, b.hash)
	}
	if c.sink != nil {
		c.sink.Publish(Event{Kind: AllBlocksCleared})
	}
}

// Usage is the fraction of blocks pinned by running requests.
func (c *Cache) Usage() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return float64(c.used) / float64(c.capacity)
}

// Len is the number of cached blocks (used and unused).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.blocks)
}
