package inferencesim

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/pacer"
)

// The generation endpoints' flow: decode and admit (prepare), then either
// stream (stream.go) or wait for the last token and answer whole, then
// record the metrics and free the slot.

// handleGenerate serves /v1/chat/completions, /v1/completions and
// /v1/responses.
func (r *rank) handleGenerate(ctx *fasthttp.RequestCtx, kind, api int) {
	g := r.getGen(kind)
	g.api = api
	g.arrival = pacer.Now()
	g.watch.watch(ctx.Conn())
	if e := g.prepare(ctx); e != nil {
		openai.WriteError(ctx, e)
		g.finishEarly()
		return
	}
	if g.stream {
		ctx.Response.Header.SetContentType("text/event-stream")
		ctx.Response.Header.Set("Cache-Control", "no-cache")
		ctx.Response.SetBodyStream(g, -1)
		return // g is released by Close
	}
	end := g.admitted
	for i := range g.choices {
		end = max(end, g.choices[i].end)
	}
	if !g.waitUntil(end) { // the client left: free the slot now, nobody reads the answer
		ctx.SetConnectionClose()
		g.finishEarly()
		return
	}
	now := pacer.Now()
	ctx.Response.Header.SetContentType("application/json")
	bp := openai.GetBuf()
	if g.api == apiResponses {
		*bp = g.appendResponseObject((*bp)[:0], true)
	} else {
		*bp = g.appendFullResponse((*bp)[:0])
	}
	if cap(*bp) > 1<<20 { // a large answer is handed over, not copied (the pool would drop it)
		ctx.Response.SetBodyRaw(*bp)
	} else {
		ctx.SetBody(*bp)
		openai.PutBuf(bp)
	}
	g.complete = true
	g.finishNonStream(now, end)
}

// finishEarly releases a request that ended before generation.
func (g *genCtx) finishEarly() {
	if g.acquired {
		g.r.kvFinish(g)
		g.r.sched.Release(g.lora)
	}
	g.release()
}

// finishNonStream records metrics with the simulated timeline anchored at
// the real admission time and the measured completion.
func (g *genCtx) finishNonStream(now, end time.Duration) {
	r := g.r
	late := max(now-end, 0)
	for i := range g.choices {
		c := &g.choices[i]
		first, last := g.admitted+c.ttft, c.end
		if n := len(c.gaps); n > 0 {
			for _, gap := range c.gaps[:n-1] {
				g.mm.ITL.Observe(gap.Seconds())
			}
			g.mm.ITL.Observe((c.gaps[n-1] + late).Seconds())
		}
		st := metrics.Request{Arrival: g.arrival, Admitted: g.admitted, FirstToken: first, LastToken: last + late,
			Finished: now, PromptTokens: c.promptTokens, CachedTokens: g.cachedTokens, GenTokens: len(c.tokens),
			MaxTokens: c.maxTokens, FinishReason: c.finish, Queued: g.queued, KvCacheQueried: r.kv != nil}
		g.mm.Observe(&st)
	}
	r.kvFinish(g)
	r.sched.Release(g.lora)
	g.acquired = false
	g.release()
}

// prepare parses, validates, admits and schedules the request. On success
// the request holds a running slot.
func (g *genCtx) prepare(ctx *fasthttp.RequestCtx) *openai.Error {
	r := g.r
	if r.sim.draining.Load() {
		return engine.ErrShuttingDown
	}
	g.counter = r.counter.Add(1)
	g.rng = textgen.NewRNG(textgen.Mix(uint64(r.cfg.Seed), g.counter))
	body := ctx.PostBody()
	var err error
	if g.api == apiResponses {
		if e := openai.CheckJSONShape(body); e != nil {
			return e
		}
		err = g.decodeResponses(body)
	} else if !g.fastDecode(body) {
		if e := openai.CheckJSONShape(body); e != nil {
			return e
		}
		g.resetRequest()
		if g.kind == kindChat {
			err = json.Unmarshal(body, &g.chat)
		} else {
			err = json.Unmarshal(body, &g.text)
		}
	}
	if err != nil {
		return openai.NewError(400, "Failed to read and parse request body, "+err.Error())
	}
	if e := returnErrorHeader(ctx); e != nil {
		return e
	}
	common := &g.chat.CommonRequest
	if g.kind == kindText {
		common = &g.text.CommonRequest
	}
	if st := r.sim.settings.Load(); st.failureRate > 0 {
		if e := engine.InjectFailure(&g.rng.Rand, st.failureRate, st.failureTypes, common.Model); e != nil {
			return e
		}
	}
	if e := g.resolveModel(common.Model); e != nil {
		return e
	}
	if e := g.readParams(common); e != nil {
		return e
	}
	if e := g.tokenizePrompt(); e != nil {
		return e
	}
	if e := g.checkOutputBudget(); e != nil {
		return e
	}
	running, queued, e := r.sched.Acquire(g.lora, g.watch.goneCh)
	if e != nil {
		return e
	}
	g.acquired, g.running, g.queued = true, running, queued
	g.admitted = pacer.Now()
	g.created = time.Now().Unix()
	prefix := "chatcmpl-"
	if g.kind == kindText {
		prefix = "cmpl-"
	}
	if g.api == apiResponses {
		prefix = "resp_"
	}
	g.id = append(g.id[:0], prefix...)
	g.id = appendUUID(g.id, r.cfg.Seed, r.port, g.counter)
	if r.kv != nil {
		if e := r.kvStart(g); e != nil {
			return e
		}
	}
	if e := g.generate(); e != nil {
		return e
	}
	return g.schedule()
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
