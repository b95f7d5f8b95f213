package inferencesim

import (
	"github.com/lensfn/lensfn/functions/inference-sim/internal/config"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

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
