package inferencesim

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/config"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/limits"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/pacer"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

const (
	kindChat = iota
	kindText
)

// Wire formats: chat and text completions, and the Responses API, which
// is processed as a chat request and only rendered differently.
const (
	apiCompletions = iota
	apiResponses
)

// choice is one generated sequence of a request.
type choice struct {
	index        int
	tokens       []string
	finish       string
	promptText   string // completions echo
	toolCalls    []toolCall
	toolOfToken  []int // streamed tool calls: tool-call index of each token
	ttft         time.Duration
	gaps         []time.Duration
	end          time.Duration // when the last token is due (monotonic offset)
	promptTokens int

	// streaming cursor
	next       int           // next token to emit
	deadline   time.Duration // when token `next` (or the finish) is due
	firstAt    time.Duration
	lastAt     time.Duration
	roleSent   bool
	finished   bool
	textOffset int
	maxTokens  int
}

func (c *choice) completionTokens() int { return len(c.tokens) }

// genCtx carries one generation request from parsing to the last byte. It
// is pooled; a streamed request returns it to the pool in Close. Its state
// is in parts, each read by one stage: the decoded request (the wire
// structs and the parameters taken from them), the prompt, the admission,
// the sequences (choices) and the stream being written.
type genCtx struct {
	r     *rank
	kind  int
	api   int
	seqNo int // Responses API event sequence number
	chat  openai.ChatRequest
	text  openai.CompletionRequest
	mm    *metrics.Model

	requestParams
	promptState
	admissionState
	fastDecoded

	choices []choice
	tokBuf  []string

	watch clientWatch // notices a client that left (clientwatch.go)

	streamState
}

// requestParams are the request's parameters once decoded and checked
// (readParams): what to generate and how to answer.
type requestParams struct {
	model         string // model name echoed in responses
	lora          string
	stream        bool
	includeUsage  bool
	maxTokens     int
	maxTokensSet  bool
	n             int
	ignoreEOS     bool
	remoteDecode  bool
	remotePrefill bool
	logprobs      bool
	topLogprobs   int
	echoPrompt    bool
	tools         []openai.ToolDef
	toolSchemas   []any // decoded parameters of each tool
	toolChoice    openai.ToolChoice
}

// promptState is the tokenized prompt and what the prefix KV cache made of
// it (tokenizePrompt, kvStart), with the scratch buffers kept across
// requests.
type promptState struct {
	promptTokens int
	cachedTokens int
	cacheMiss    bool // prefix-cache hit rate below the threshold
	prompts      []openai.Prompt
	promptStore  [1]openai.Prompt
	promptBuf    []byte
	tokScratch   []string
	idScratch    []uint32
	kvBlocks     []uint64
}

// admissionState is the request's identity and its passage through the
// scheduler: arrival, admission (monotonic offsets) and the slot it holds.
type admissionState struct {
	id       []byte
	created  int64
	counter  uint64
	rng      textgen.RNG
	arrival  time.Duration
	admitted time.Duration
	queued   bool
	running  int
	acquired bool
}

// fastDecoded holds what the fast-path decoder (fastjson.go) read, with the
// private copy of the body its strings point into.
type fastDecoded struct {
	bodyCopy          []byte
	fastMaxTokens     int64
	fastMaxCompletion int64
	fastN             int64
	fastTemperature   float64
	fastTopP          float64
	fastStreamOptions openai.StreamOptions
}

// streamState is the stream being written: the rendered frames not yet
// read by fasthttp and where the stream stands.
type streamState struct {
	out      []byte
	outOff   int
	started  bool
	done     bool
	complete bool
}

var genPool = sync.Pool{New: func() any { return &genCtx{} }}

func (r *rank) getGen(kind int) *genCtx {
	g := genPool.Get().(*genCtx)
	g.r, g.kind = r, kind
	return g
}

// resetRequest clears the decoded request, keeping the messages' storage.
func (g *genCtx) resetRequest() {
	msgs := g.chat.Messages[:cap(g.chat.Messages)]
	clear(msgs)
	g.chat = openai.ChatRequest{Messages: msgs[:0]}
	g.text = openai.CompletionRequest{}
	g.fastStreamOptions = openai.StreamOptions{}
}

func (g *genCtx) reset() {
	g.resetRequest()
	for i := range g.choices {
		gaps := g.choices[i].gaps[:0]
		g.choices[i] = choice{gaps: gaps}
	}
	clear(g.tokBuf)
	clear(g.tokScratch)
	*g = genCtx{
		chat: g.chat, choices: g.choices[:0], tokBuf: g.tokBuf[:0],
		promptState:    promptState{promptBuf: g.promptBuf[:0], tokScratch: g.tokScratch[:0], idScratch: g.idScratch[:0], kvBlocks: g.kvBlocks[:0]},
		admissionState: admissionState{id: g.id[:0]},
		streamState:    streamState{out: g.out[:0]},
		fastDecoded:    fastDecoded{bodyCopy: g.bodyCopy[:0]},
	}
}

func (g *genCtx) release() {
	g.watch.stop()
	g.reset()
	// Do not let one huge request pin large buffers in the pool.
	const keep = 64 << 10
	if cap(g.out) > keep {
		g.out = nil
	}
	if cap(g.bodyCopy) > keep {
		g.bodyCopy = nil
	}
	if cap(g.promptBuf) > keep {
		g.promptBuf = nil
	}
	if cap(g.tokBuf) > keep/16 {
		g.tokBuf = nil
	}
	genPool.Put(g)
}

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

func (g *genCtx) resolveModel(name string) *openai.Error {
	r := g.r
	for _, s := range r.cfg.ServedModelNames {
		if s == name {
			g.model = name
			g.mm = r.metrics.ForModel(r.metrics.BaseModel)
			return nil
		}
	}
	if lora, ok := r.loras.Lookup(name); ok {
		g.model, g.lora = lora, lora
		g.mm = r.metrics.ForModel(lora)
		return nil
	}
	return openai.NewParamError(404, "The model `"+name+"` does not exist.", "model")
}

func (g *genCtx) readParams(c *openai.CommonRequest) *openai.Error {
	g.stream = c.Stream
	g.includeUsage = c.Stream && c.StreamOptions != nil && c.StreamOptions.IncludeUsage
	max := c.MaxTokens
	if g.kind == kindChat && g.chat.MaxCompletionTokens != nil {
		max = g.chat.MaxCompletionTokens
	}
	if max != nil {
		if *max <= 0 {
			return openai.NewParamError(400, "max_tokens must be at least 1, got "+strconv.FormatInt(*max, 10)+".", "max_tokens")
		}
		g.maxTokens, g.maxTokensSet = int(min(*max, 1<<31-1)), true
	}
	g.n = 1
	if c.N != nil {
		if *c.N <= 0 {
			return openai.NewParamError(400, "n must be at least 1, got "+strconv.FormatInt(*c.N, 10)+".", "n")
		}
		if *c.N > limits.MaxSequences {
			return openai.NewParamError(400, "n must be at most "+strconv.Itoa(limits.MaxSequences)+".", "n")
		}
		g.n = int(*c.N)
	}
	if e := openai.CheckSampling(c); e != nil {
		return e
	}
	g.ignoreEOS = c.IgnoreEOS
	if g.ignoreEOS && !g.maxTokensSet && g.r.cfg.Mode == config.ModeRandom {
		return openai.NewParamError(400, "ignore_eos requires max_tokens (or max_completion_tokens) to be set.", "ignore_eos")
	}
	kv := c.KVTransferParams
	g.remoteDecode = c.DoRemoteDecode || (kv != nil && kv.DoRemoteDecode)
	g.remotePrefill = c.DoRemotePrefill || (kv != nil && kv.DoRemotePrefill)
	if g.remoteDecode && g.stream {
		return openai.NewParamError(400, "Prefill does not support streaming", "stream")
	}
	if c.CacheHitThreshold != nil && (*c.CacheHitThreshold < 0 || *c.CacheHitThreshold > 1) {
		return openai.NewParamError(400, "cache_hit_threshold must be within [0, 1].", "cache_hit_threshold")
	}
	if g.kind == kindChat {
		if len(g.chat.Messages) == 0 {
			return openai.NewParamError(400, "messages must not be empty.", "messages")
		}
		if e := openai.CheckRoles(g.chat.Messages); e != nil {
			return e
		}
		g.logprobs = g.chat.Logprobs
		if g.chat.TopLogprobs != nil {
			if *g.chat.TopLogprobs < 0 || *g.chat.TopLogprobs > 20 {
				return openai.NewParamError(400, "top_logprobs must be within 0-20.", "top_logprobs")
			}
			if !g.logprobs && *g.chat.TopLogprobs > 0 {
				return openai.NewParamError(400, "top_logprobs requires logprobs to be true.", "top_logprobs")
			}
			g.topLogprobs = int(*g.chat.TopLogprobs)
		}
		if len(g.chat.Tools) > 0 {
			// The structural checks always apply, even with
			// --skip-tool-validation: they are what keeps generation safe.
			schemas, e := validateTools(g.chat.Tools)
			if e != nil {
				return e
			}
			g.toolSchemas = schemas
		}
		tc, err := openai.ParseToolChoice(g.chat.ToolChoice, len(g.chat.Tools) > 0)
		if err != nil {
			return openai.NewParamError(400, err.Error(), "tool_choice")
		}
		if tc.Mode == "function" && findTool(g.chat.Tools, tc.Name) == nil {
			return openai.NewParamError(400, "tool_choice names the function "+strconv.Quote(tc.Name)+" that is not in tools.", "tool_choice")
		}
		if tc.Mode == "required" && len(g.chat.Tools) == 0 {
			return openai.NewParamError(400, "tool_choice \"required\" needs at least one tool.", "tool_choice")
		}
		g.tools, g.toolChoice = g.chat.Tools, tc
	} else {
		if g.text.Logprobs != nil {
			if *g.text.Logprobs < 0 || *g.text.Logprobs > 20 {
				return openai.NewParamError(400, "logprobs must be within 0-20.", "logprobs")
			}
			g.logprobs, g.topLogprobs = true, int(*g.text.Logprobs)
		}
		g.echoPrompt = g.text.Echo
		if text, ok := openai.PlainJSONString(g.text.Prompt); ok {
			// the common single string prompt, without allocating
			g.promptStore[0] = openai.Prompt{Text: text}
			g.prompts = g.promptStore[:1]
		} else {
			ps, err := openai.ParsePrompts(g.text.Prompt, limits.MaxSequences)
			if err != nil {
				return openai.NewParamError(400, err.Error(), "prompt")
			}
			g.prompts = ps
		}
		if len(g.prompts)*g.n > limits.MaxSequences {
			return openai.NewParamError(400, "prompts x n must be at most "+strconv.Itoa(limits.MaxSequences)+", got "+
				strconv.Itoa(len(g.prompts))+" x "+strconv.Itoa(g.n)+".", "n")
		}
	}
	return nil
}

// tokenizePrompt counts prompt tokens (and ids when the KV cache needs
// them) and checks the context window.
func (g *genCtx) tokenizePrompt() *openai.Error {
	r := g.r
	needIDs := r.kv != nil
	what := "messages"
	longest := 0
	if g.kind == kindChat {
		g.promptBuf = appendChatPrompt(g.promptBuf[:0], g.chat.Messages)
		s := openai.UnsafeString(g.promptBuf)
		if needIDs {
			g.idScratch = textgen.AppendTokenIDs(g.idScratch[:0], s)
			g.promptTokens = len(g.idScratch)
		} else {
			g.promptTokens = textgen.CountTokens(s)
		}
		longest = g.promptTokens
	} else {
		what = "prompt"
		for i := range g.prompts {
			p := &g.prompts[i]
			n := len(p.IDs)
			if !p.IsIDs {
				n = textgen.CountTokens(p.Text)
			}
			p.Tokens = n
			g.promptTokens += n
			longest = max(longest, n)
		}
		if needIDs && len(g.prompts) > 0 {
			p := &g.prompts[0]
			if p.IsIDs {
				for _, id := range p.IDs {
					g.idScratch = append(g.idScratch, uint32(id))
				}
			} else {
				g.idScratch = textgen.AppendTokenIDs(g.idScratch[:0], p.Text)
			}
		}
	}
	maxLen := r.cfg.MaxModelLen
	if g.maxTokensSet && longest+g.maxTokens > maxLen {
		return openai.NewError(400, "This model's maximum context length is "+strconv.Itoa(maxLen)+
			" tokens. However, you requested "+strconv.Itoa(longest+g.maxTokens)+" tokens ("+
			strconv.Itoa(longest)+" in the "+what+", "+strconv.Itoa(g.maxTokens)+
			" in the completion). Please reduce the length of the "+what+" or completion.")
	}
	if longest >= maxLen {
		return openai.NewError(400, "This model's maximum context length is "+strconv.Itoa(maxLen)+
			" tokens. However, your "+what+" resulted in "+strconv.Itoa(longest)+
			" tokens. Please reduce the length of the "+what+".")
	}
	return nil
}

// generate produces the tokens of every choice.
func (g *genCtx) generate() *openai.Error {
	r := g.r
	nPrompts := 1
	if g.kind == kindText {
		nPrompts = len(g.prompts)
	}
	total := nPrompts * g.n
	if cap(g.choices) < total {
		g.choices = make([]choice, total)
	}
	g.choices = g.choices[:total]
	for p := 0; p < nPrompts; p++ {
		promptTokens := g.promptTokens
		var echoSrc string
		if g.kind == kindChat {
			echoSrc = lastUserText(g.chat.Messages)
		} else {
			pr := &g.prompts[p]
			promptTokens = pr.Tokens
			if pr.IsIDs {
				echoSrc = openai.IDsText(pr.IDs)
			} else {
				echoSrc = pr.Text
			}
		}
		for k := 0; k < g.n; k++ {
			i := p*g.n + k
			c := &g.choices[i]
			c.index = i
			c.promptTokens = promptTokens
			if g.kind == kindText && g.echoPrompt {
				c.promptText = echoSrc
			}
			remaining := r.cfg.MaxModelLen - promptTokens
			maxResp := remaining
			if g.maxTokensSet {
				maxResp = min(g.maxTokens, remaining)
			}
			c.maxTokens = maxResp
			if g.cacheMiss {
				c.finish = finishCacheThreshold
				continue
			}
			if g.kind == kindChat && g.toolChoice.Mode != "none" && len(g.tools) > 0 {
				if done, e := g.generateToolCalls(c, maxResp); e != nil {
					return e
				} else if done {
					continue
				}
			}
			start := len(g.tokBuf)
			switch {
			case r.cfg.Mode == config.ModeEcho:
				g.tokBuf = textgen.AppendTokens(g.tokBuf, echoSrc)
				c.finish = finishStop
				if g.maxTokensSet && len(g.tokBuf)-start >= g.maxTokens {
					c.finish = finishLength
				}
			case r.dataset != nil:
				var reason string
				g.tokBuf, reason = r.dataset.appendResponse(g.tokBuf, &g.rng, g.promptBuf, maxResp, g.ignoreEOS, g.maxTokensSet)
				c.finish = reason
			default:
				var n int
				switch {
				case g.ignoreEOS:
					n = maxResp
				case g.maxTokensSet:
					n = textgen.ResponseLengthHistogram(&g.rng, 1, maxResp)
				default:
					n = textgen.ResponseLengthGaussian(&g.rng, 1, maxResp)
				}
				g.tokBuf = textgen.AppendPresetTokens(g.tokBuf, &g.rng, n)
				c.finish = finishStop
				if n == maxResp {
					c.finish = finishLength
				}
			}
			c.tokens = g.tokBuf[start:len(g.tokBuf):len(g.tokBuf)]
			if g.remoteDecode {
				c.finish = finishRemoteDecode
			}
		}
	}
	// tokBuf may have been reallocated while appending: re-slice choices.
	off := 0
	for i := range g.choices {
		c := &g.choices[i]
		n := len(c.tokens)
		c.tokens = g.tokBuf[off : off+n : off+n]
		off += n
	}
	return nil
}

// appendChatPrompt flattens messages the way the reference tokenizes chat:
// "### <role>: <text>\n" per message.
func appendChatPrompt(b []byte, msgs []openai.ChatMessage) []byte {
	for i := range msgs {
		b = append(b, "### "...)
		b = append(b, msgs[i].Role...)
		b = append(b, ": "...)
		b = append(b, msgs[i].Content.Text...)
		b = append(b, '\n')
	}
	return b
}

func lastUserText(msgs []openai.ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content.Text
		}
	}
	return msgs[len(msgs)-1].Content.Text
}

// schedule asks the latency calculator for each choice's timeline, once
// per choice.
func (g *genCtx) schedule() *openai.Error {
	calc := g.r.sim.settings.Load().calc
	for i := range g.choices {
		c := &g.choices[i]
		in := latency.Input{
			PromptTokens: c.promptTokens, CachedPromptTokens: g.cachedTokens, OutputTokens: len(c.tokens),
			RunningRequests: g.running, MaxNumSeqs: g.r.cfg.MaxNumSeqs, RemotePrefill: g.remotePrefill,
			Rand: textgen.Mix(g.rng.Uint64(), uint64(i)),
		}
		if g.cacheMiss { // answered at once, without generation
			c.ttft, c.gaps, c.deadline, c.end = 0, c.gaps[:0], g.admitted, g.admitted
			continue
		}
		ttft, gaps, err := calc.Schedule(in, c.gaps[:0])
		if err != nil {
			return openai.NewError(500, "latency calculator failed")
		}
		if len(gaps) < max(len(c.tokens)-1, 0) {
			return openai.NewError(500, "latency calculator returned too few gaps")
		}
		gaps = gaps[:max(len(c.tokens)-1, 0)]
		c.ttft, c.gaps = ttft, gaps
		c.deadline = g.admitted + ttft
		c.end = c.deadline
		for _, gap := range gaps {
			c.end += gap
		}
	}
	return nil
}

// Streaming: genCtx is the response body. fasthttp calls Read from the
// connection's goroutine and sends each returned slice as one HTTP chunk,
// flushed; Read blocks until the next frame is due. All frames due at the
// same moment leave in one chunk (one write), so a zero-latency stream
// costs one syscall and a late server catches up without extra writes.

func (g *genCtx) Read(p []byte) (int, error) {
	if g.outOff < len(g.out) {
		return g.copyFrames(p), nil
	}
	if g.done {
		return 0, io.EOF
	}
	g.out, g.outOff = g.out[:0], 0
	next, ok := g.nextDeadline()
	if !ok {
		g.finishStream()
	} else {
		if !g.waitUntil(next) {
			return 0, errClientGone
		}
		if late := g.r.sim.beforeEmit; late != nil {
			late()
		}
		g.emitDue(pacer.Now())
	}
	return g.copyFrames(p), nil
}

// copyFrames copies as many whole SSE frames as fit into p, so no event is
// split across HTTP chunks (line-oriented clients that read the raw
// chunked stream rely on that); only a frame larger than p is split.
func (g *genCtx) copyFrames(p []byte) int {
	rest := g.out[g.outOff:]
	if len(rest) > len(p) {
		if i := bytes.LastIndex(rest[:len(p)], sseFrameEnd); i > 0 {
			rest = rest[:i+len(sseFrameEnd)]
		}
	}
	n := copy(p, rest)
	g.outOff += n
	return n
}

var sseFrameEnd = []byte("\n\n")

// nextDeadline is the earliest pending event of any choice.
func (g *genCtx) nextDeadline() (time.Duration, bool) {
	var best time.Duration
	found := false
	for i := range g.choices {
		c := &g.choices[i]
		if c.finished {
			continue
		}
		if !found || c.deadline < best {
			best, found = c.deadline, true
		}
	}
	return best, found
}

// emitDue appends every frame whose deadline has passed.
func (g *genCtx) emitDue(now time.Duration) {
	for i := range g.choices {
		c := &g.choices[i]
		for !c.finished && c.deadline <= now && len(g.out) < limits.StreamBatchBytes {
			if g.kind == kindChat && !c.roleSent {
				if g.api == apiResponses {
					g.out = g.appendResponsesOpening(g.out, c)
				} else {
					g.out = g.appendRoleChunk(g.out, c)
				}
				c.roleSent = true
			}
			if c.next < len(c.tokens) {
				if c.next == 0 {
					// The gaps are anchored at the first token actually sent: when it is
					// late (queueing, CPU contention) the rest keep their spacing instead
					// of being already due and leaving in one burst. Each later deadline
					// is still absolute (anchor + sum of gaps), so error never accumulates,
					// and the lateness stays in the TTFT, where vLLM shows it too.
					c.firstAt, c.deadline = now, now
				} else {
					g.mm.ITL.Observe((now - c.lastAt).Seconds())
				}
				c.lastAt = now
				if g.api == apiResponses {
					g.out = g.appendResponsesDelta(g.out, c.tokens[c.next])
				} else if c.toolOfToken != nil {
					g.out = g.appendToolCallChunk(g.out, c, c.next)
				} else {
					g.out = g.appendTokenChunk(g.out, c, c.tokens[c.next])
					c.textOffset += len(c.tokens[c.next])
				}
				if c.next < len(c.gaps) {
					c.deadline += c.gaps[c.next]
				}
				c.next++
				continue
			}
			if c.next == 0 {
				c.firstAt, c.lastAt = now, now
			}
			if g.api == apiResponses {
				g.out = g.appendResponsesClosing(g.out, c)
			} else {
				g.out = g.appendFinishChunk(g.out, c)
			}
			c.finished = true
		}
	}
	if _, ok := g.nextDeadline(); !ok {
		g.finishStream()
	}
}

func (g *genCtx) finishStream() {
	if g.done {
		return
	}
	if g.api == apiResponses { // the Responses API ends with response.completed
		g.done, g.complete = true, true
		return
	}
	if g.includeUsage {
		g.out = g.appendUsageChunk(g.out)
	}
	g.out = appendDone(g.out)
	g.done, g.complete = true, true
}

// Close is called by fasthttp when the body has been written or the
// client went away; it records metrics and frees the running slot.
func (g *genCtx) Close() error {
	now := pacer.Now()
	if g.complete {
		for i := range g.choices {
			c := &g.choices[i]
			st := metrics.Request{Arrival: g.arrival, Admitted: g.admitted, FirstToken: c.firstAt, LastToken: c.lastAt,
				Finished: now, PromptTokens: c.promptTokens, CachedTokens: g.cachedTokens, GenTokens: len(c.tokens),
				MaxTokens: c.maxTokens, FinishReason: c.finish, Queued: g.queued, KvCacheQueried: g.r.kv != nil}
			g.mm.Observe(&st)
		}
	}
	g.r.kvFinish(g)
	g.r.sched.Release(g.lora)
	g.acquired = false
	g.release()
	return nil
}
