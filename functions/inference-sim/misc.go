package inferencesim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// /tokenize: {"prompt"} or {"messages"} → {"max_model_len","count","tokens","token_strs":null}.
func (r *rank) handleTokenize(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		writeError(ctx, newError(405, "Method not allowed, use POST"))
		return
	}
	var req struct {
		Model    string        `json:"model"`
		Prompt   *string       `json:"prompt"`
		Messages []chatMessage `json:"messages"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		writeError(ctx, newError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	var text string
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case req.Messages != nil:
		text = string(appendChatPrompt(nil, req.Messages))
	default:
		writeError(ctx, newParamError(400, "either prompt or messages is required", "prompt"))
		return
	}
	ids := appendTokenIDs(nil, text)
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

// /v1/embeddings: deterministic unit vectors derived from the input's
// token ids, float or base64 encoded.
func (r *rank) handleEmbeddings(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		writeError(ctx, newError(405, "Method not allowed, use POST"))
		return
	}
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		writeError(ctx, newError(400, "Failed to read and parse request body, "+err.Error()))
		return
	}
	g := &genCtx{r: r}
	if e := g.resolveModel(req.Model); e != nil {
		writeError(ctx, e)
		return
	}
	inputs, err := parsePrompts(req.Input)
	if err != nil {
		writeError(ctx, newParamError(400, strings.Replace(err.Error(), "prompt", "input", 1), "input"))
		return
	}
	dims := r.cfg.DefaultEmbeddingDimensions
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > 65536 {
			writeError(ctx, newParamError(400, "dimensions must be within 1-65536", "dimensions"))
			return
		}
		dims = *req.Dimensions
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(ctx, newParamError(400, "encoding_format must be float or base64", "encoding_format"))
		return
	}
	b := []byte(`{"object":"list","data":[`)
	total := 0
	vec := make([]float32, dims)
	for i, in := range inputs {
		var ids []uint32
		if in.IsIDs {
			for _, id := range in.IDs {
				ids = append(ids, uint32(id))
			}
		} else {
			ids = appendTokenIDs(nil, in.Text)
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
			raw := make([]byte, 4*dims)
			for j, v := range vec {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(v))
			}
			b = appendJSONString(b, base64.StdEncoding.EncodeToString(raw))
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
	b = appendJSONString(b, req.Model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, "}}"...)
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(b)
}

// embed fills vec with a unit vector determined by the token ids.
func embed(vec []float32, ids []uint32) {
	seed := uint64(1469598103934665603)
	for _, id := range ids {
		seed = (seed ^ uint64(id)) * 1099511628211
	}
	g := newRNG(seed)
	var norm float64
	for i := range vec {
		v := g.normal(0, 1)
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

// adminView is the document GET /admin/config returns and POST accepts
// (partially): the settings that may change at run time.
type adminView struct {
	FailureInjectionRate         *int            `json:"failure-injection-rate,omitempty"`
	FailureTypes                 *[]string       `json:"failure-types,omitempty"`
	LatencyCalculator            *string         `json:"latency-calculator,omitempty"`
	TimeToFirstToken             *string         `json:"time-to-first-token,omitempty"`
	TimeToFirstTokenStdDev       *string         `json:"time-to-first-token-std-dev,omitempty"`
	InterTokenLatency            *string         `json:"inter-token-latency,omitempty"`
	InterTokenLatencyStdDev      *string         `json:"inter-token-latency-std-dev,omitempty"`
	KVCacheTransferLatency       *string         `json:"kv-cache-transfer-latency,omitempty"`
	KVCacheTransferLatencyStdDev *string         `json:"kv-cache-transfer-latency-std-dev,omitempty"`
	PrefillOverhead              *string         `json:"prefill-overhead,omitempty"`
	PrefillTimePerToken          *string         `json:"prefill-time-per-token,omitempty"`
	PrefillTimeStdDev            *string         `json:"prefill-time-std-dev,omitempty"`
	KVCacheTransferTimePerToken  *string         `json:"kv-cache-transfer-time-per-token,omitempty"`
	KVCacheTransferTimeStdDev    *string         `json:"kv-cache-transfer-time-std-dev,omitempty"`
	TimeFactorUnderLoad          *float64        `json:"time-factor-under-load,omitempty"`
	FakeMetrics                  json.RawMessage `json:"fake-metrics,omitempty"`
}

func viewOf(st *settings) adminView {
	p := st.latencyParams
	s := func(d interface{ String() string }) *string { v := d.String(); return &v }
	rate, types, name, factor := st.failureRate, append([]string{}, st.failureTypes...), st.calcName, p.TimeFactorUnderLoad
	v := adminView{FailureInjectionRate: &rate, FailureTypes: &types, LatencyCalculator: &name,
		TimeToFirstToken: s(p.TimeToFirstToken), TimeToFirstTokenStdDev: s(p.TimeToFirstTokenStdDev),
		InterTokenLatency: s(p.InterTokenLatency), InterTokenLatencyStdDev: s(p.InterTokenLatencyStdDev),
		KVCacheTransferLatency: s(p.KVCacheTransferLatency), KVCacheTransferLatencyStdDev: s(p.KVCacheTransferLatencyStdDev),
		PrefillOverhead: s(p.PrefillOverhead), PrefillTimePerToken: s(p.PrefillTimePerToken), PrefillTimeStdDev: s(p.PrefillTimeStdDev),
		KVCacheTransferTimePerToken: s(p.KVCacheTransferTimePerToken), KVCacheTransferTimeStdDev: s(p.KVCacheTransferTimeStdDev),
		TimeFactorUnderLoad: &factor, FakeMetrics: json.RawMessage("null")}
	if st.fake != nil {
		v.FakeMetrics, _ = json.Marshal(st.fake)
	}
	return v
}

// /admin/config: GET returns the run-time settings; POST changes some of
// them (failure injection, latency, fake metrics). Anything else is a 400.
func (r *rank) handleAdminConfig(ctx *fasthttp.RequestCtx) {
	s := r.sim
	if ctx.IsGet() {
		b, _ := json.Marshal(viewOf(s.settings.Load()))
		ctx.Response.Header.SetContentType(ctJSON)
		ctx.SetBody(b)
		return
	}
	if !ctx.IsPost() {
		writeError(ctx, newError(405, "Method not allowed, use GET or POST"))
		return
	}
	var upd adminView
	dec := json.NewDecoder(bytes.NewReader(ctx.PostBody()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&upd); err != nil {
		writeError(ctx, newError(400, "Invalid admin configuration update: "+err.Error()))
		return
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	cur := *s.settings.Load()
	if upd.FailureInjectionRate != nil {
		if *upd.FailureInjectionRate < 0 || *upd.FailureInjectionRate > 100 {
			writeError(ctx, newParamError(400, "failure-injection-rate must be within 0-100", "failure-injection-rate"))
			return
		}
		cur.failureRate = *upd.FailureInjectionRate
	}
	if upd.FailureTypes != nil {
		for _, f := range *upd.FailureTypes {
			if !containsString(AllFailureTypes, f) {
				writeError(ctx, newParamError(400, "unknown failure type "+strconv.Quote(f), "failure-types"))
				return
			}
		}
		cur.failureTypes = *upd.FailureTypes
	}
	p := cur.latencyParams
	set := func(v *string, dst *time.Duration) bool {
		if v == nil {
			return true
		}
		d, err := ParseDuration(*v)
		if err != nil {
			writeError(ctx, newError(400, "Invalid admin configuration update: "+err.Error()))
			return false
		}
		*dst = d
		return true
	}
	ok := set(upd.TimeToFirstToken, &p.TimeToFirstToken) && set(upd.TimeToFirstTokenStdDev, &p.TimeToFirstTokenStdDev) &&
		set(upd.InterTokenLatency, &p.InterTokenLatency) && set(upd.InterTokenLatencyStdDev, &p.InterTokenLatencyStdDev) &&
		set(upd.KVCacheTransferLatency, &p.KVCacheTransferLatency) && set(upd.KVCacheTransferLatencyStdDev, &p.KVCacheTransferLatencyStdDev) &&
		set(upd.PrefillOverhead, &p.PrefillOverhead) && set(upd.PrefillTimePerToken, &p.PrefillTimePerToken) &&
		set(upd.PrefillTimeStdDev, &p.PrefillTimeStdDev) && set(upd.KVCacheTransferTimePerToken, &p.KVCacheTransferTimePerToken) &&
		set(upd.KVCacheTransferTimeStdDev, &p.KVCacheTransferTimeStdDev)
	if !ok {
		return
	}
	if upd.TimeFactorUnderLoad != nil {
		p.TimeFactorUnderLoad = *upd.TimeFactorUnderLoad
	}
	if upd.LatencyCalculator != nil {
		cur.calcName = *upd.LatencyCalculator
	}
	if p != cur.latencyParams || upd.LatencyCalculator != nil {
		calc, err := s.resolve(cur.calcName, p)
		if err != nil {
			writeError(ctx, newError(400, "Invalid latency settings: "+err.Error()))
			return
		}
		cur.calc, cur.latencyParams = calc, p
	}
	if len(upd.FakeMetrics) > 0 {
		if string(upd.FakeMetrics) == "null" {
			cur.fake = nil
		} else {
			fm, err := ParseFakeMetrics(upd.FakeMetrics)
			if err != nil {
				writeError(ctx, newParamError(400, err.Error(), "fake-metrics"))
				return
			}
			cur.fake = fm
		}
	}
	s.settings.Store(&cur)
	b, _ := json.Marshal(viewOf(&cur))
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(b)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
