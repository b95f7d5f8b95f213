package inferencesim

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/render"
)

// /v1/embeddings: deterministic unit vectors derived from the input's
// token ids, float or base64 encoded.
func (r *rank) handleEmbeddings(ctx *fasthttp.RequestCtx) {
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
	}
	if e := openai.DecodeBody(ctx.PostBody(), &req); e != nil {
		openai.WriteError(ctx, e)
		return
	}
	if _, _, _, e := r.resolveModel(req.Model); e != nil {
		openai.WriteError(ctx, e)
		return
	}
	inputs, err := openai.ParsePrompts(req.Input, limits.MaxEmbeddingInputs)
	if err != nil {
		openai.WriteError(ctx, openai.NewParamError(400, strings.Replace(err.Error(), "prompt", "input", 1), "input"))
		return
	}
	dims := r.cfg.DefaultEmbeddingDimensions
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > limits.MaxEmbeddingDimensions {
			openai.WriteError(ctx, openai.NewParamError(400, "dimensions must be within 1-"+strconv.Itoa(limits.MaxEmbeddingDimensions), "dimensions"))
			return
		}
		dims = *req.Dimensions
	}
	if len(inputs)*dims > limits.MaxEmbeddingValues {
		openai.WriteError(ctx, openai.NewParamError(400, "inputs x dimensions must be at most "+strconv.Itoa(limits.MaxEmbeddingValues)+", got "+
			strconv.Itoa(len(inputs))+" x "+strconv.Itoa(dims)+"; send fewer inputs per request", "input"))
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		openai.WriteError(ctx, openai.NewParamError(400, "encoding_format must be float or base64", "encoding_format"))
		return
	}
	out := render.NewEmbeddings(len(inputs), dims, req.Model, req.EncodingFormat == "base64")
	total := 0
	vec := make([]float32, dims)
	for _, in := range inputs {
		var ids []uint32
		if in.IsIDs {
			for _, id := range in.IDs {
				ids = append(ids, uint32(id))
			}
		} else {
			ids = r.gen.Tokenizer.AppendIDs(nil, in.Text)
		}
		total += len(ids)
		engine.Embed(vec, ids)
		out.Add(vec)
	}
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.Response.SetBodyRaw(out.Body(req.Model, total))
}
