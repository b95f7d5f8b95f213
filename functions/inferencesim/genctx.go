package inferencesim

import (
	"sync"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/render"
)

// genCtx carries one generation request over HTTP, from the body to the last byte: the
// engine's request (decoded, generated and scheduled), the model's metric set, the watch on
// the client's connection and the stream being written. It is pooled; a streamed request
// returns it to the pool in Close (stream.go), any other in end (completions.go).
type genCtx struct {
	r     *rank
	api   render.API
	req   engine.Request
	mm    *metrics.Model
	watch clientWatch // notices a client that left (clientwatch.go)
	out   render.Stream
	held  int64 // bytes of the simulator's in-flight budget this request holds
	// ticket is the request in the rank's engine model (enginemode.go), nil otherwise.
	ticket *engineTicket
	// dw lets the engine's loop write the stream's chunks itself (directwrite.go).
	dw directWriter
}

var genPool = sync.Pool{New: func() any { return &genCtx{} }}

func (r *rank) getGen(api render.API) *genCtx {
	g := genPool.Get().(*genCtx)
	g.r, g.api = r, api
	g.out.Reset(api, streamKeepBytes)
	return g
}

// streamKeepBytes bounds the stream buffer a pooled genCtx keeps: one huge answer must not
// pin a large buffer in the pool.
const streamKeepBytes = 64 << 10
