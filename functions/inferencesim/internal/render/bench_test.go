package render

import (
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
)

// BenchmarkStreamTokens: rendering and reading a streamed text completion of 248 tokens,
// each token's chunk due on its own (as the engine model emits them, one step at a time).
// The figure per op is one whole stream.
func BenchmarkStreamTokens(b *testing.B) {
	r := request(&testing.T{}, engine.Text, `{"model":"m","prompt":"hi","max_tokens":248,"ignore_eos":true,"stream":true}`)
	start := r.Seqs[0].Cursor
	var s Stream
	buf := make([]byte, 4096)
	itl := &discard{}
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		r.Seqs[0].Cursor = start
		s.Reset(Completions, 1<<16)
		for !s.Done() {
			next, ok := r.NextDeadline()
			if !ok {
				s.Finish(r)
			} else {
				s.Emit(r, next, itl)
			}
			for s.Pending() {
				n += s.Copy(buf)
			}
		}
	}
	b.ReportMetric(float64(n/b.N), "bytes/stream")
	if n/b.N < 248*100 {
		b.Fatalf("%d bytes a stream: not every token was rendered", n/b.N)
	}
}
