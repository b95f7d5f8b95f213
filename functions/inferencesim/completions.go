package inferencesim

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/pacer"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/render"
)

// The generation endpoints' flow: decode and admit (prepare), then either
// stream (stream.go) or wait for the last token and answer whole, then
// record the metrics and free the slot.

// handleGenerate serves /v1/chat/completions, /v1/completions and
// /v1/responses.
func (r *rank) handleGenerate(ctx *fasthttp.RequestCtx, kind engine.Kind, api render.API) {
	g := r.getGen(api)
	g.req.Admission.Arrival = pacer.Now()
	g.watch.watch(ctx.Conn())
	if e := g.prepare(ctx, kind); e != nil {
		g.logRefused(e)
		openai.WriteError(ctx, e)
		g.end()
		return
	}
	if g.req.Params.Stream {
		ctx.Response.Header.SetContentType("text/event-stream")
		ctx.Response.Header.Set("Cache-Control", "no-cache")
		if g.ticket != nil && len(g.ticket.seqs) == 1 {
			g.dw.attach(ctx.Conn())
			g.ticket.direct = g
		}
		ctx.Response.SetBodyStream(g, -1)
		return // g is released by Close
	}
	var end time.Duration
	if g.ticket != nil {
		if !g.waitEngineDone() {
			ctx.SetConnectionClose()
			g.end()
			return
		}
	} else if end = g.req.End(); !g.waitUntil(end) { // the client left: free the slot now, nobody reads the answer
		ctx.SetConnectionClose()
		g.end()
		return
	}
	now := pacer.Now()
	ctx.Response.Header.SetContentType("application/json")
	bp := openai.GetBuf()
	if g.api == render.Responses {
		*bp = render.ResponseObject((*bp)[:0], &g.req, true)
	} else {
		*bp = render.Full((*bp)[:0], &g.req)
	}
	if cap(*bp) > 1<<20 { // a large answer is handed over, not copied (the pool would drop it)
		ctx.Response.SetBodyRaw(*bp)
	} else {
		ctx.SetBody(*bp)
		openai.PutBuf(bp)
	}
	if g.ticket != nil {
		g.finishEngine(now)
		return
	}
	g.finishNonStream(now, end)
}

// finishNonStream records metrics with the simulated timeline anchored at
// the real admission time and the measured completion.
func (g *genCtx) finishNonStream(now, end time.Duration) {
	late := max(now-end, 0)
	for i := range g.req.Seqs {
		s := &g.req.Seqs[i]
		if n := len(s.Gaps); n > 0 {
			for _, gap := range s.Gaps[:n-1] {
				g.mm.ITL.Observe(gap.Seconds())
			}
			g.mm.ITL.Observe((s.Gaps[n-1] + late).Seconds())
		}
		observe(g, s, g.req.Admission.Admitted+s.TTFT, s.End+late, now)
	}
	g.end()
}

// observe records one finished sequence of g in the request metrics.
func observe(g *genCtx, s *engine.Sequence, first, last, now time.Duration) {
	adm := &g.req.Admission
	st := metrics.Request{Arrival: adm.Arrival, Admitted: adm.Admitted, FirstToken: first, LastToken: last,
		Finished: now, PromptTokens: s.PromptTokens, CachedTokens: g.req.Prompt.Cached, GenTokens: len(s.Tokens),
		MaxTokens: s.MaxTokens, FinishReason: s.Finish, Queued: adm.Queued, KvCacheQueried: g.r.kv != nil || g.r.engine != nil}
	g.mm.Observe(&st)
}

// end frees the running slot, if the request got one (an engine-model request leaves the
// engine if it has not finished), and returns g to the pool.
func (g *genCtx) end() {
	if g.ticket != nil {
		if !g.ticket.done() {
			g.r.engine.abort(g.ticket)
		}
		g.r.gen.Finish(&g.req)
		g.ticket = nil
	}
	if g.req.Admission.Acquired {
		g.r.gen.Finish(&g.req)
		g.r.sched.Release(g.req.LoRA)
	}
	if g.held > 0 {
		g.r.sim.inFlight.Release(g.held)
		g.held = 0
	}
	g.watch.stop()
	g.dw.attach(nil)
	g.req.Reset()
	g.out.Reset(render.Completions, streamKeepBytes)
	g.r, g.mm = nil, nil
	genPool.Put(g)
}

// prepare parses, validates, admits and schedules the request. On success
// the request holds a running slot.
func (g *genCtx) prepare(ctx *fasthttp.RequestCtx, kind engine.Kind) *openai.Error {
	r, req := g.r, &g.req
	if r.sim.draining.Load() {
		return engine.ErrShuttingDown
	}
	// The body is held to the answer's last byte: it counts against the in-flight budget
	// before anything is built from it.
	body := int64(len(ctx.PostBody()))
	held, ok := r.sim.inFlight.Acquire(body)
	if !ok {
		return openai.NewError(503, r.sim.inFlight.Refusal(body))
	}
	g.held = held
	counter := r.counter.Add(1)
	req.Begin(kind, r.cfg.Seed, counter)
	var e *openai.Error
	if g.api == render.Responses {
		e = req.Wire.DecodeResponses(ctx.PostBody())
	} else {
		e = req.Wire.Decode(ctx.PostBody(), req.Kind == engine.Chat)
	}
	if e != nil {
		return e
	}
	g.logRequest(ctx.Path())
	if e := returnErrorHeader(ctx); e != nil {
		return e
	}
	common := req.Wire.Common(req.Kind == engine.Chat)
	if st := r.sim.settings.Load(); st.failureRate > 0 {
		if e := engine.InjectFailure(&req.RNG.Rand, st.failureRate, st.failureTypes, common.Model); e != nil {
			return e
		}
	}
	model, lora, mm, e := r.resolveModel(common.Model)
	if e != nil {
		return e
	}
	req.Model, req.LoRA, g.mm = model, lora, mm
	if e := r.gen.Check(req); e != nil {
		return e
	}
	if r.engine != nil {
		return g.prepareEngine(counter)
	}
	running, queued, e := r.sched.Acquire(req.LoRA, g.watch.goneCh)
	if e != nil {
		return e
	}
	req.Admission.Acquired, req.Admission.Running, req.Admission.Queued = true, running, queued
	req.Admission.Admitted = pacer.Now()
	if e := g.start(counter); e != nil {
		return e
	}
	g.logAdmitted()
	return r.gen.Schedule(req, r.sim.settings.Load().calc)
}

// start names the request, pins its prompt in the prefix cache and generates its tokens.
func (g *genCtx) start(counter uint64) *openai.Error {
	r, req := g.r, &g.req
	req.Created = time.Now().Unix()
	prefix := "chatcmpl-"
	if req.Kind == engine.Text {
		prefix = "cmpl-"
	}
	if g.api == render.Responses {
		prefix = "resp_"
	}
	req.ID = append(req.ID[:0], prefix...)
	req.ID = engine.AppendRequestID(req.ID, r.cfg.Seed, r.port, counter)
	if e := r.gen.Start(req); e != nil {
		return e
	}
	r.gen.Generate(req)
	return nil
}

// prepareEngine hands a checked request to the rank's engine model, which queues, batches
// and times it; no admission slot is taken (the engine is the scheduler).
func (g *genCtx) prepareEngine(counter uint64) *openai.Error {
	req := &g.req
	req.Admission.Admitted = pacer.Now()
	if e := g.start(counter); e != nil {
		g.r.gen.Finish(req)
		return e
	}
	t, e := g.r.engine.submit(req)
	if e != nil {
		g.r.gen.Finish(req)
		return e
	}
	g.ticket = t
	return nil
}

// resolveModel maps a request's model to the base model or a known LoRA adapter (the
// registry's copy of its name, also the adapter to run on) and its metric set.
func (r *rank) resolveModel(name string) (model, lora string, mm *metrics.Model, e *openai.Error) {
	for _, s := range r.cfg.ServedModelNames {
		if s == name {
			return name, "", r.metrics.ForModel(r.metrics.BaseModel), nil
		}
	}
	if lora, ok := r.loras.Lookup(name); ok {
		return lora, lora, r.metrics.ForModel(lora), nil
	}
	return "", "", nil, openai.NewParamError(404, "The model `"+name+"` does not exist.", "model")
}

func returnErrorHeader(ctx *fasthttp.RequestCtx) *openai.Error {
	h := ctx.Request.Header.Peek("X-Return-Error")
	if len(h) == 0 {
		return nil
	}
	code, err := strconv.Atoi(string(h))
	if err != nil || code < 100 || code > 599 {
		return openai.NewError(400, "Invalid X-Return-Error header value "+strconv.Quote(string(h))+": must be an HTTP status code")
	}
	return openai.NewError(code, "Simulated error triggered by X-Return-Error header (code "+strconv.Itoa(code)+")")
}
