package inferencesim

import (
	"io"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/pacer"
)

// Streaming: genCtx is the response body. fasthttp calls Read from the
// connection's goroutine and sends each returned slice as one HTTP chunk,
// flushed; Read blocks until the next frame is due. All frames due at the
// same moment leave in one chunk (one write), so a zero-latency stream
// costs one syscall and a late server catches up without extra writes.

func (g *genCtx) Read(p []byte) (int, error) {
	if g.out.Pending() {
		return g.out.Copy(p), nil
	}
	if g.out.Done() {
		return 0, io.EOF
	}
	if g.ticket != nil {
		n, err := g.readEngine(p)
		g.dw.flushed = n > 0 // fasthttp writes and flushes it before reading again
		return n, err
	}
	next, ok := g.req.NextDeadline()
	if !ok {
		g.out.Finish(&g.req)
	} else {
		if !g.waitUntil(next) {
			return 0, errClientGone
		}
		if late := g.r.sim.beforeEmit; late != nil {
			late()
		}
		g.out.Emit(&g.req, pacer.Now(), g.mm.ITL)
	}
	return g.out.Copy(p), nil
}

// Close is called by fasthttp when the body has been written or the
// client went away; it records metrics and frees the running slot.
func (g *genCtx) Close() error {
	now := pacer.Now()
	if g.out.Done() {
		for i := range g.req.Seqs {
			s := &g.req.Seqs[i]
			observe(g, s, s.FirstAt, s.LastAt, now)
		}
	}
	g.end()
	return nil
}
