package engine

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// Params are the request's parameters once decoded and checked: how much to generate, how
// many sequences, and how to answer (streaming, usage, logprobs, echo, P/D disaggregation).
type Params struct {
	Stream        bool
	IncludeUsage  bool
	MaxTokens     int
	MaxTokensSet  bool
	N             int
	IgnoreEOS     bool
	RemoteDecode  bool
	RemotePrefill bool
	Logprobs      bool
	TopLogprobs   int
	Echo          bool // text completions: the prompt precedes the answer
}

// read takes the parameters chat and text completions share from c (maxTokens is
// max_completion_tokens when a chat request sets it, else max_tokens); randomMode is
// --mode random, where ignore_eos needs a length.
func (p *Params) read(c *openai.CommonRequest, maxTokens *int64, randomMode bool) *openai.Error {
	p.Stream = c.Stream
	p.IncludeUsage = c.Stream && c.StreamOptions != nil && c.StreamOptions.IncludeUsage
	if maxTokens != nil {
		if *maxTokens <= 0 {
			return openai.NewParamError(400, "max_tokens must be at least 1, got "+strconv.FormatInt(*maxTokens, 10)+".", "max_tokens")
		}
		p.MaxTokens, p.MaxTokensSet = int(min(*maxTokens, 1<<31-1)), true
	}
	p.N = 1
	if c.N != nil {
		if *c.N <= 0 {
			return openai.NewParamError(400, "n must be at least 1, got "+strconv.FormatInt(*c.N, 10)+".", "n")
		}
		if *c.N > limits.MaxSequences {
			return openai.NewParamError(400, "n must be at most "+strconv.Itoa(limits.MaxSequences)+".", "n")
		}
		p.N = int(*c.N)
	}
	if e := openai.CheckSampling(c); e != nil {
		return e
	}
	p.IgnoreEOS = c.IgnoreEOS
	if p.IgnoreEOS && !p.MaxTokensSet && randomMode {
		return openai.NewParamError(400, "ignore_eos requires max_tokens (or max_completion_tokens) to be set.", "ignore_eos")
	}
	kv := c.KVTransferParams
	p.RemoteDecode = c.DoRemoteDecode || (kv != nil && kv.DoRemoteDecode)
	p.RemotePrefill = c.DoRemotePrefill || (kv != nil && kv.DoRemotePrefill)
	if p.RemoteDecode && p.Stream {
		return openai.NewParamError(400, "Prefill does not support streaming", "stream")
	}
	if c.CacheHitThreshold != nil && (*c.CacheHitThreshold < 0 || *c.CacheHitThreshold > 1) {
		return openai.NewParamError(400, "cache_hit_threshold must be within [0, 1].", "cache_hit_threshold")
	}
	return nil
}

// readChatLogprobs takes a chat request's logprobs and top_logprobs.
func (p *Params) readChatLogprobs(c *openai.ChatRequest) *openai.Error {
	p.Logprobs = c.Logprobs
	if c.TopLogprobs != nil {
		if *c.TopLogprobs < 0 || *c.TopLogprobs > 20 {
			return openai.NewParamError(400, "top_logprobs must be within 0-20.", "top_logprobs")
		}
		if !p.Logprobs && *c.TopLogprobs > 0 {
			return openai.NewParamError(400, "top_logprobs requires logprobs to be true.", "top_logprobs")
		}
		p.TopLogprobs = int(*c.TopLogprobs)
	}
	return nil
}

// readTextLogprobs takes a text completion's logprobs (the number of alternatives) and echo.
func (p *Params) readTextLogprobs(c *openai.CompletionRequest) *openai.Error {
	if c.Logprobs != nil {
		if *c.Logprobs < 0 || *c.Logprobs > 20 {
			return openai.NewParamError(400, "logprobs must be within 0-20.", "logprobs")
		}
		p.Logprobs, p.TopLogprobs = true, int(*c.Logprobs)
	}
	p.Echo = c.Echo
	return nil
}

// Limit is the most tokens a sequence may generate after a prompt of promptTokens in a
// context of maxModelLen: the rest of the context, or max_tokens when that is less.
func (p *Params) Limit(promptTokens, maxModelLen int) int {
	limit := maxModelLen - promptTokens
	if p.MaxTokensSet {
		limit = min(limit, p.MaxTokens)
	}
	return limit
}
