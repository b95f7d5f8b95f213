package engine

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// checkOutputBudget refuses a request whose sequences could generate more than
// limits.MaxGeneratedUnits between them (see the constant). It runs once every prompt's
// length is known.
func checkOutputBudget(r *Request, maxModelLen int) *openai.Error {
	p := &r.Params
	weight := 1 + 2*p.TopLogprobs // an alternative's JSON is several times a token's text
	total := 0
	add := func(promptTokens int) {
		total += max(p.Limit(promptTokens, maxModelLen), 0) * p.N * weight
	}
	if r.Kind == Text {
		for i := range r.Prompt.Texts {
			add(r.Prompt.Texts[i].Tokens)
		}
	} else {
		add(r.Prompt.Tokens)
	}
	if total > limits.MaxGeneratedUnits {
		what := "sequences x max_tokens"
		if p.TopLogprobs > 0 {
			what += " x (1 + top_logprobs)"
		}
		return openai.NewParamError(400, "This request could generate "+strconv.Itoa(total)+" tokens ("+what+
			"), more than the simulator's limit of "+strconv.Itoa(limits.MaxGeneratedUnits)+
			" per request; lower max_tokens, n or the number of prompts.", "max_tokens")
	}
	return nil
}
