package inferencesim

import (
	"bytes"
	"io"
	"time"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/limits"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/pacer"
)

// Streaming: genCtx is the response body. fasthttp calls Read from the
// connection's goroutine and sends each returned slice as one HTTP chunk,
// flushed; Read blocks until the next frame is due. All frames due at the
// same moment leave in one chunk (one write), so a zero-latency stream
// costs one syscall and a late server catches up without extra writes.

func (g *genCtx) Read(p []byte) (int, error) {
	if g.outOff < len(g.out) {
		return g.copyFrames(p), nil
	}
	if g.done {
		return 0, io.EOF
	}
	g.out, g.outOff = g.out[:0], 0
	next, ok := g.nextDeadline()
	if !ok {
		g.finishStream()
	} else {
		if !g.waitUntil(next) {
			return 0, errClientGone
		}
		if late := g.r.sim.beforeEmit; late != nil {
			late()
		}
		g.emitDue(pacer.Now())
	}
	return g.copyFrames(p), nil
}

// copyFrames copies as many whole SSE frames as fit into p, so no event is
// split across HTTP chunks (line-oriented clients that read the raw
// chunked stream rely on that); only a frame larger than p is split.
func (g *genCtx) copyFrames(p []byte) int {
	rest := g.out[g.outOff:]
	if len(rest) > len(p) {
		if i := bytes.LastIndex(rest[:len(p)], sseFrameEnd); i > 0 {
			rest = rest[:i+len(sseFrameEnd)]
		}
	}
	n := copy(p, rest)
	g.outOff += n
	return n
}

var sseFrameEnd = []byte("\n\n")

// nextDeadline is the earliest pending event of any choice.
func (g *genCtx) nextDeadline() (time.Duration, bool) {
	var best time.Duration
	found := false
	for i := range g.choices {
		c := &g.choices[i]
		if c.finished {
			continue
		}
		if !found || c.deadline < best {
			best, found = c.deadline, true
		}
	}
	return best, found
}

// emitDue appends every frame whose deadline has passed.
func (g *genCtx) emitDue(now time.Duration) {
	for i := range g.choices {
		c := &g.choices[i]
		for !c.finished && c.deadline <= now && len(g.out) < limits.StreamBatchBytes {
			if g.kind == kindChat && !c.roleSent {
				if g.api == apiResponses {
					g.out = g.appendResponsesOpening(g.out, c)
				} else {
					g.out = g.appendRoleChunk(g.out, c)
				}
				c.roleSent = true
			}
			if c.next < len(c.tokens) {
				if c.next == 0 {
					// The gaps are anchored at the first token actually sent: when it is
					// late (queueing, CPU contention) the rest keep their spacing instead
					// of being already due and leaving in one burst. Each later deadline
					// is still absolute (anchor + sum of gaps), so error never accumulates,
					// and the lateness stays in the TTFT, where vLLM shows it too.
					c.firstAt, c.deadline = now, now
				} else {
					g.mm.ITL.Observe((now - c.lastAt).Seconds())
				}
				c.lastAt = now
				if g.api == apiResponses {
					g.out = g.appendResponsesDelta(g.out, c.tokens[c.next])
				} else if c.toolOfToken != nil {
					g.out = g.appendToolCallChunk(g.out, c, c.next)
				} else {
					g.out = g.appendTokenChunk(g.out, c, c.tokens[c.next])
					c.textOffset += len(c.tokens[c.next])
				}
				if c.next < len(c.gaps) {
					c.deadline += c.gaps[c.next]
				}
				c.next++
				continue
			}
			if c.next == 0 {
				c.firstAt, c.lastAt = now, now
			}
			if g.api == apiResponses {
				g.out = g.appendResponsesClosing(g.out, c)
			} else {
				g.out = g.appendFinishChunk(g.out, c)
			}
			c.finished = true
		}
	}
	if _, ok := g.nextDeadline(); !ok {
		g.finishStream()
	}
}

func (g *genCtx) finishStream() {
	if g.done {
		return
	}
	if g.api == apiResponses { // the Responses API ends with response.completed
		g.done, g.complete = true, true
		return
	}
	if g.includeUsage {
		g.out = g.appendUsageChunk(g.out)
	}
	g.out = appendDone(g.out)
	g.done, g.complete = true, true
}

// Close is called by fasthttp when the body has been written or the
// client went away; it records metrics and frees the running slot.
func (g *genCtx) Close() error {
	now := pacer.Now()
	if g.complete {
		for i := range g.choices {
			c := &g.choices[i]
			st := metrics.Request{Arrival: g.arrival, Admitted: g.admitted, FirstToken: c.firstAt, LastToken: c.lastAt,
				Finished: now, PromptTokens: c.promptTokens, CachedTokens: g.cachedTokens, GenTokens: len(c.tokens),
				MaxTokens: c.maxTokens, FinishReason: c.finish, Queued: g.queued, KvCacheQueried: g.r.kv != nil}
			g.mm.Observe(&st)
		}
	}
	g.r.kvFinish(g)
	g.r.sched.Release(g.lora)
	g.acquired = false
	g.release()
	return nil
}
