package inferencesim

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/config"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/limits"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// resolveModel maps the request's model to the base model or a known LoRA adapter (the
// registry's copy of its name) and its metric set.
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
