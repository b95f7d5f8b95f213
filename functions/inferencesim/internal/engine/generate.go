package engine

import (
	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// Generator is one rank's generation: what tokens a request produces (the prompt and its
// context window, the output budget, tool calls, dataset-backed or preset or echoed
// responses) and when each is due. Its steps run in order on a decoded request: Check
// before admission, then Start, Generate and Schedule once the request holds a running
// slot, and Finish when it ends.
type Generator struct {
	cfg     *config.Config
	dataset *Dataset // nil: preset responses
	kv      *KV      // nil: no prefix cache
	loras   *LoRARegistry
	// Tokenizer tokenizes prompts (nil: the dummy tokenizer).
	Tokenizer textgen.Tokenizer
}

func (g *Generator) tokenizer() textgen.Tokenizer {
	if g.Tokenizer == nil {
		return textgen.Dummy
	}
	return g.Tokenizer
}

// NewGenerator builds a rank's generator; dataset and kv may be nil.
func NewGenerator(cfg *config.Config, dataset *Dataset, kv *KV, loras *LoRARegistry) *Generator {
	return &Generator{cfg: cfg, dataset: dataset, kv: kv, loras: loras}
}

// Check reads and checks the request's parameters, tools and prompts, tokenizes the
// prompts against the context window and refuses a request over the output budget.
func (g *Generator) Check(r *Request) *openai.Error {
	common := r.Wire.Common(r.Kind == Chat)
	maxTokens := common.MaxTokens
	if r.Kind == Chat && r.Wire.Chat.MaxCompletionTokens != nil {
		maxTokens = r.Wire.Chat.MaxCompletionTokens
	}
	if e := r.Params.read(common, maxTokens, g.cfg.Mode == config.ModeRandom); e != nil {
		return e
	}
	if r.Kind == Chat {
		chat := &r.Wire.Chat
		if len(chat.Messages) == 0 {
			return openai.NewParamError(400, "messages must not be empty.", "messages")
		}
		if e := openai.CheckRoles(chat.Messages); e != nil {
			return e
		}
		if e := r.Params.readChatLogprobs(chat); e != nil {
			return e
		}
		if e := r.Tools.read(chat); e != nil {
			return e
		}
	} else {
		if e := r.Params.readTextLogprobs(&r.Wire.Text); e != nil {
			return e
		}
		if e := r.Prompt.readTexts(r.Wire.Text.Prompt, r.Params.N); e != nil {
			return e
		}
	}
	longest, what := r.Prompt.tokenize(g.tokenizer(), r.Kind, r.Wire.Chat.Messages, g.kv != nil || g.cfg.EngineModel())
	if e := checkContext(longest, what, &r.Params, g.cfg.MaxModelLen); e != nil {
		return e
	}
	return checkOutputBudget(r, g.cfg.MaxModelLen)
}

// Start pins the prompt's blocks in the prefix cache and sets the cached tokens; a hit rate
// below the request's (or the global) threshold marks a cache miss, answered at once.
func (g *Generator) Start(r *Request) *openai.Error {
	if g.kv == nil {
		return nil
	}
	p := &r.Prompt
	model, loraID := g.cfg.Model, 0
	if r.LoRA != "" {
		model, loraID = r.LoRA, g.loras.ID(r.LoRA)
	}
	blocks, cached, err := g.kv.Start(p.kvBlocks, model, p.ids, loraID, r.LoRA)
	p.kvBlocks = blocks
	if err != nil {
		return openai.NewError(500, err.Error())
	}
	p.Cached = cached
	threshold := g.cfg.GlobalCacheHitThreshold
	if t := r.Wire.Common(r.Kind == Chat).CacheHitThreshold; t != nil {
		threshold = *t
	}
	if threshold > 0 && p.Tokens > 0 && float64(p.Cached)/float64(p.Tokens) < threshold {
		p.CacheMiss = true
	}
	return nil
}

// Finish unpins the request's blocks.
func (g *Generator) Finish(r *Request) {
	if g.kv != nil {
		r.Prompt.kvBlocks = g.kv.Finish(r.Prompt.kvBlocks)
	}
}

// Generate produces the tokens of every sequence: n per prompt. It cannot fail: Check
// refused what could not be generated, and a dataset that cannot answer falls back to
// preset tokens.
func (g *Generator) Generate(r *Request) {
	nPrompts := 1
	if r.Kind == Text {
		nPrompts = len(r.Prompt.Texts)
	}
	n := r.Params.N
	total := nPrompts * n
	if cap(r.Seqs) < total {
		r.Seqs = make([]Sequence, total)
	}
	r.Seqs = r.Seqs[:total]
	// The echo text is the answer only in echo mode, and the prompt text of an `echo` text
	// completion: build it (a token-id prompt's text allocates) only then.
	wantEcho := g.cfg.Mode == config.ModeEcho || r.Kind == Text && r.Params.Echo
	// A dataset answers by the prompt's hash: each prompt is hashed once for its n sequences.
	wantKey := g.dataset != nil && g.cfg.Mode != config.ModeEcho && !r.Prompt.CacheMiss
	for p := 0; p < nPrompts; p++ {
		promptTokens, echo := r.Prompt.Tokens, ""
		var key []byte
		if wantKey {
			key = r.Prompt.Hash(g.tokenizer(), r.Kind, p)
		}
		if r.Kind == Chat {
			if wantEcho {
				echo = lastUserText(r.Wire.Chat.Messages)
			}
		} else {
			t := &r.Prompt.Texts[p]
			promptTokens = t.Tokens
			switch {
			case !wantEcho:
			case t.IsIDs:
				echo = openai.IDsText(t.IDs)
			default:
				echo = t.Text
			}
		}
		for k := 0; k < n; k++ {
			i := p*n + k
			s := &r.Seqs[i]
			s.Index, s.PromptTokens = i, promptTokens
			if r.Kind == Text && r.Params.Echo {
				s.PromptText = echo
			}
			s.MaxTokens = r.Params.Limit(promptTokens, g.cfg.MaxModelLen)
			g.generateSequence(r, s, echo, key)
		}
	}
	// r.tokens may have been reallocated while appending: re-slice the sequences.
	off := 0
	for i := range r.Seqs {
		s := &r.Seqs[i]
		n := len(s.Tokens)
		s.Tokens = r.tokens[off : off+n : off+n]
		off += n
	}
}

// generateSequence fills one sequence: nothing on a cache miss, tool calls when it calls a
// tool, else the echoed prompt (--mode echo), the dataset's answer to the prompt whose hash
// is datasetKey, or preset tokens of a length drawn like the reference's.
func (g *Generator) generateSequence(r *Request, s *Sequence, echo string, datasetKey []byte) {
	if r.Prompt.CacheMiss {
		s.Finish = FinishCacheThreshold
		return
	}
	maxResp, params := s.MaxTokens, &r.Params
	if r.Kind == Chat && r.Tools.active() && r.generateToolCalls(s, maxResp, &g.cfg.Tools) {
		return
	}
	start := len(r.tokens)
	switch {
	case g.cfg.Mode == config.ModeEcho:
		// The specification: echo mode ignores max_tokens, max_completion_tokens and
		// ignore_eos; the answer is the whole echoed text and it always stops.
		r.tokens = textgen.AppendTokens(r.tokens, echo)
		s.Finish = FinishStop
	case g.dataset != nil:
		r.tokens, s.Finish = g.dataset.AppendResponse(r.tokens, &r.RNG, datasetKey, maxResp, params.IgnoreEOS, params.MaxTokensSet)
	default:
		var n int
		switch {
		case params.IgnoreEOS:
			n = maxResp
		case params.MaxTokensSet:
			n = textgen.ResponseLengthHistogram(&r.RNG, 1, maxResp)
		default:
			n = textgen.ResponseLengthGaussian(&r.RNG, 1, maxResp)
		}
		r.tokens = textgen.AppendPresetTokens(r.tokens, &r.RNG, n)
		s.Finish = FinishStop
		if n == maxResp {
			s.Finish = FinishLength
		}
	}
	s.Tokens = r.tokens[start:len(r.tokens):len(r.tokens)]
	if params.RemoteDecode {
		s.Finish = FinishRemoteDecode
	}
}

// Schedule asks the latency calculator for each sequence's timeline, once per sequence,
// from the admission on.
func (g *Generator) Schedule(r *Request, calc latency.Calculator) *openai.Error {
	adm := &r.Admission
	for i := range r.Seqs {
		s := &r.Seqs[i]
		in := latency.Input{
			PromptTokens: s.PromptTokens, CachedPromptTokens: r.Prompt.Cached, OutputTokens: len(s.Tokens),
			RunningRequests: adm.Running, MaxNumSeqs: g.cfg.MaxNumSeqs, RemotePrefill: r.Params.RemotePrefill,
			Rand: textgen.Mix(r.RNG.Uint64(), uint64(i)),
		}
		if r.Prompt.CacheMiss { // answered at once, without generation
			s.TTFT, s.Gaps, s.Deadline, s.End = 0, s.Gaps[:0], adm.Admitted, adm.Admitted
			continue
		}
		ttft, gaps, err := calc.Schedule(in, s.Gaps[:0])
		if err != nil {
			return openai.NewError(500, "latency calculator failed")
		}
		if len(gaps) < max(len(s.Tokens)-1, 0) {
			return openai.NewError(500, "latency calculator returned too few gaps")
		}
		gaps = gaps[:max(len(s.Tokens)-1, 0)]
		s.TTFT, s.Gaps = ttft, gaps
		s.Deadline = adm.Admitted + ttft
		s.End = s.Deadline
		for _, gap := range gaps {
			s.End += gap
		}
	}
	return nil
}
