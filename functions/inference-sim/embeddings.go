package inferencesim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/limits"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
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
	g := &genCtx{r: r}
	if e := g.resolveModel(req.Model); e != nil {
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
	// Sized once for the whole answer (a float and its comma take at most 16 bytes,
	// base64 needs 6 per value), so it is allocated once and not copied.
	b := make([]byte, 0, len(inputs)*(dims*16+64)+len(req.Model)+128)
	b = append(b, `{"object":"list","data":[`...)
	total := 0
	vec := make([]float32, dims)
	var raw []byte
	if req.EncodingFormat == "base64" {
		raw = make([]byte, 4*dims)
	}
	for i, in := range inputs {
		var ids []uint32
		if in.IsIDs {
			for _, id := range in.IDs {
				ids = append(ids, uint32(id))
			}
		} else {
			ids = textgen.AppendTokenIDs(nil, in.Text)
		}
		total += len(ids)
		embed(vec, ids)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if req.EncodingFormat == "base64" {
			for j, v := range vec {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(v))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, v := range vec {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = openai.AppendJSONString(b, req.Model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, "}}"...)
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.Response.SetBodyRaw(b)
}

// embed fills vec with a unit vector determined by the token ids.
func embed(vec []float32, ids []uint32) {
	seed := uint64(1469598103934665603)
	for _, id := range ids {
		seed = (seed ^ uint64(id)) * 1099511628211
	}
	g := textgen.NewRNG(seed)
	var norm float64
	for i := range vec {
		v := g.Normal(0, 1)
		vec[i] = float32(v)
		norm += v * v
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return
	}
	for i := range vec {
		vec[i] = float32(float64(vec[i]) / norm)
	}
}
