package inferencesim

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/limits"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// checkOutputBudget refuses a request whose sequences could generate more
// than maxGeneratedUnits between them (see the constant). It runs after
// tokenizePrompt, when every prompt's length is known.
func (g *genCtx) checkOutputBudget() *openai.Error {
	maxLen := g.r.cfg.MaxModelLen
	weight := 1 + 2*g.topLogprobs // an alternative's JSON is several times a token's text
	total := 0
	add := func(promptTokens int) {
		limit := maxLen - promptTokens
		if g.maxTokensSet {
			limit = min(limit, g.maxTokens)
		}
		total += max(limit, 0) * g.n * weight
	}
	if g.kind == kindText {
		for i := range g.prompts {
			add(g.prompts[i].Tokens)
		}
	} else {
		add(g.promptTokens)
	}
	if total > limits.MaxGeneratedUnits {
		what := "sequences x max_tokens"
		if g.topLogprobs > 0 {
			what += " x (1 + top_logprobs)"
		}
		return openai.NewParamError(400, "This request could generate "+strconv.Itoa(total)+" tokens ("+what+
			"), more than the simulator's limit of "+strconv.Itoa(limits.MaxGeneratedUnits)+
			" per request; lower max_tokens, n or the number of prompts.", "max_tokens")
	}
	return nil
}
