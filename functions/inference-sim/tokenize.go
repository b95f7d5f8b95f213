package inferencesim

import (
	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/render"
)

// /tokenize: {"prompt"} or {"messages"} → {"max_model_len","count","tokens","token_strs":null}.
func (r *rank) handleTokenize(ctx *fasthttp.RequestCtx) {
	var req struct {
		Model    string               `json:"model"`
		Prompt   *string              `json:"prompt"`
		Messages []openai.ChatMessage `json:"messages"`
	}
	if e := openai.DecodeBody(ctx.PostBody(), &req); e != nil {
		openai.WriteError(ctx, e)
		return
	}
	var text string
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case req.Messages != nil:
		text = string(engine.AppendChatPrompt(nil, req.Messages))
	default:
		openai.WriteError(ctx, openai.NewParamError(400, "either prompt or messages is required", "prompt"))
		return
	}
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(render.Tokenize(nil, r.cfg.MaxModelLen, textgen.AppendTokenIDs(nil, text)))
}
