package openai

import "sync"

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func GetBuf() *[]byte { return bufPool.Get().(*[]byte) }

func PutBuf(b *[]byte) {
	if cap(*b) > 1<<20 { // do not keep huge buffers alive
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
