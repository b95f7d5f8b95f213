package inferencesim

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
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
		text = string(appendChatPrompt(nil, req.Messages))
	default:
		openai.WriteError(ctx, openai.NewParamError(400, "either prompt or messages is required", "prompt"))
		return
	}
	ids := textgen.AppendTokenIDs(nil, text)
	b := []byte(`{"max_model_len":`)
	b = strconv.AppendInt(b, int64(r.cfg.MaxModelLen), 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(len(ids)), 10)
	b = append(b, `,"tokens":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	b = append(b, `],"token_strs":null}`...)
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(b)
}
