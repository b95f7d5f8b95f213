package inferencesim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"

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
	if e := checkJSONShape(ctx.PostBody()); e != nil {
		writeError(ctx, e)
		return
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
	if e := checkJSONShape(ctx.PostBody()); e != nil {
		writeError(ctx, e)
		return
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
	inputs, err := parsePrompts(req.Input, maxEmbeddingInputs)
	if err != nil {
		writeError(ctx, newParamError(400, strings.Replace(err.Error(), "prompt", "input", 1), "input"))
		return
	}
	dims := r.cfg.DefaultEmbeddingDimensions
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > maxEmbeddingDimensions {
			writeError(ctx, newParamError(400, "dimensions must be within 1-"+strconv.Itoa(maxEmbeddingDimensions), "dimensions"))
			return
		}
		dims = *req.Dimensions
	}
	if len(inputs)*dims > maxEmbeddingValues {
		writeError(ctx, newParamError(400, "inputs x dimensions must be at most "+strconv.Itoa(maxEmbeddingValues)+", got "+
			strconv.Itoa(len(inputs))+" x "+strconv.Itoa(dims)+"; send fewer inputs per request", "input"))
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(ctx, newParamError(400, "encoding_format must be float or base64", "encoding_format"))
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
	b = appendJSONString(b, req.Model)
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
	if e := checkJSONShape(ctx.PostBody()); e != nil {
		writeError(ctx, e)
		return
	}
	var upd map[string]json.RawMessage
	if err := json.Unmarshal(ctx.PostBody(), &upd); err != nil || upd == nil {
		msg := "the body must be a JSON object of settings"
		if err != nil {
			msg = err.Error()
		}
		writeError(ctx, newError(400, "Invalid admin configuration update: "+msg))
		return
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	next, e := s.applyAdminUpdate(upd)
	if e != nil {
		writeError(ctx, e)
		return
	}
	s.settings.Store(next)
	b, _ := json.Marshal(viewOf(next))
	ctx.Response.Header.SetContentType(ctJSON)
	ctx.SetBody(b)
}

// adminSettings are the flags /admin/config may change at run time.
var adminSettings = []string{"failure-injection-rate", "failure-types", "latency-calculator",
	"time-to-first-token", "time-to-first-token-std-dev", "inter-token-latency", "inter-token-latency-std-dev",
	"kv-cache-transfer-latency", "kv-cache-transfer-latency-std-dev", "prefill-overhead", "prefill-time-per-token",
	"prefill-time-std-dev", "kv-cache-transfer-time-per-token", "kv-cache-transfer-time-std-dev",
	"time-factor-under-load", "fake-metrics"}

// applyAdminUpdate validates an update exactly as the command line is
// validated: each value goes through its flag's parser onto a copy of the
// running configuration, and the copy through Config.Validate. Nothing
// changes unless all of it is valid.
func (s *Simulator) applyAdminUpdate(upd map[string]json.RawMessage) (*settings, *apiError) {
	cur := s.settings.Load()
	c := *s.cfg
	c.FailureInjectionRate, c.FailureTypes, c.FakeMetrics = cur.failureRate, cur.failureTypes, cur.fake
	c.LatencyCalculator, c.Latency = cur.calcName, cur.latencyParams
	keys := make([]string, 0, len(upd))
	for k := range upd {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first error reported does not depend on map order
	invalid := func(msg string) *apiError { return newError(400, "Invalid admin configuration update: "+msg) }
	for _, key := range keys {
		if !containsString(adminSettings, key) {
			return nil, invalid("unknown or read-only setting " + strconv.Quote(key) + " (settable: " + strings.Join(adminSettings, ", ") + ")")
		}
		raw := bytes.TrimSpace(upd[key])
		if key == "fake-metrics" && string(raw) == "null" {
			c.FakeMetrics = nil
			continue
		}
		vals, err := flagValues(raw)
		if err != nil {
			return nil, newParamError(400, "Invalid admin configuration update: --"+key+": "+err.Error(), key)
		}
		spec := lookupFlag(key)
		if len(vals) == 0 && !spec.multi {
			return nil, newParamError(400, "Invalid admin configuration update: --"+key+" needs a value", key)
		}
		if err := spec.set(&c, vals); err != nil {
			return nil, newParamError(400, "Invalid admin configuration update: "+err.Error(), key)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, invalid(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	next := &settings{failureRate: c.FailureInjectionRate, failureTypes: c.FailureTypes, calcName: c.LatencyCalculator,
		latencyParams: c.Latency, calc: cur.calc, fake: c.FakeMetrics}
	if next.latencyParams != cur.latencyParams || next.calcName != cur.calcName {
		calc, err := s.resolve(next.calcName, next.latencyParams)
		if err != nil {
			return nil, newError(400, "Invalid latency settings: "+err.Error())
		}
		next.calc = calc
	}
	return next, nil
}

// flagValues turns a JSON value into the arguments its flag would get on
// the command line: a string or number as written, an array's scalars one
// by one, an object as its JSON text (--fake-metrics).
func flagValues(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing value")
	}
	switch raw[0] {
	case '"':
		var v string
		err := json.Unmarshal(raw, &v)
		return []string{v}, err
	case '{':
		return []string{string(raw)}, nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			v, err := flagValues(bytes.TrimSpace(it))
			if err != nil || len(v) != 1 || (len(it) > 0 && (it[0] == '[' || it[0] == '{')) {
				return nil, errors.New("a list may hold only strings or numbers")
			}
			out = append(out, v[0])
		}
		return out, nil
	case 'n':
		return nil, nil
	}
	return []string{string(raw)}, nil // a number or a boolean, as typed on the command line
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
