package inferencesim

import (
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/render"
)

// route is one entry of the route table: the methods a path answers (none: any method, for
// the probes and /metrics) and its handler.
type route struct {
	methods    []string
	notAllowed string // the 405 message, naming the methods
	handle     func(*rank, *fasthttp.RequestCtx)
}

func (rt route) allows(method []byte) bool {
	if len(rt.methods) == 0 {
		return true
	}
	for _, m := range rt.methods {
		if string(method) == m {
			return true
		}
	}
	return false
}

func on(handle func(*rank, *fasthttp.RequestCtx), methods ...string) route {
	return route{methods: methods, notAllowed: "Method not allowed, use " + strings.Join(methods, " or "), handle: handle}
}

// routes is the simulator's one route table (method + path), the reference simulator's
// endpoints. Authentication by path prefix (/v1 and /admin) runs before it; a known path
// asked with another method gets an OpenAI-style 405 naming the methods, an unknown one 404.
var routes = map[string]route{
	"/v1/chat/completions":    on(func(r *rank, ctx *fasthttp.RequestCtx) { r.handleGenerate(ctx, engine.Chat, render.Completions) }, "POST"),
	"/v1/completions":         on(func(r *rank, ctx *fasthttp.RequestCtx) { r.handleGenerate(ctx, engine.Text, render.Completions) }, "POST"),
	"/v1/responses":           on(func(r *rank, ctx *fasthttp.RequestCtx) { r.handleGenerate(ctx, engine.Chat, render.Responses) }, "POST"),
	"/v1/models":              on((*rank).handleModels, "GET"),
	"/v1/load_lora_adapter":   on((*rank).handleLoadLoRA, "POST"),
	"/v1/unload_lora_adapter": on((*rank).handleUnloadLoRA, "POST"),
	"/v1/embeddings":          on((*rank).handleEmbeddings, "POST"),
	"/tokenize":               on((*rank).handleTokenize, "POST"),
	"/admin/config":           on((*rank).handleAdminConfig, "GET", "POST"),
	"/metrics":                on(func(r *rank, ctx *fasthttp.RequestCtx) { r.metricsHandler(ctx) }),
	"/health":                 on(func(_ *rank, ctx *fasthttp.RequestCtx) { ctx.Response.Header.SetContentType(ctJSON) }),
	"/ready":                  on((*rank).handleReady),
	"/health/ready":           on((*rank).handleReady),
}

// handleReady is 503 while the startup duration lasts and once the drain began.
func (r *rank) handleReady(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetContentType(ctJSON)
	if time.Since(r.sim.started) < r.cfg.StartupDuration || r.sim.draining.Load() {
		ctx.SetStatusCode(503)
	}
}
