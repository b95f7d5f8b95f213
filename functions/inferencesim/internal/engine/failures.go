package engine

import (
	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/wasm-modules/splitmix"
)

// InjectFailure fails a request on purpose with probability ratePercent %
// (--failure-injection-rate), choosing among types (--failure-types; none: all of them)
// with the request's seeded generator (a fixed order, so a seed reproduces the pattern),
// with the reference simulator's statuses and messages. It is nil for a request that goes on.
func InjectFailure(rg *splitmix.Rand, ratePercent int, types []string, model string) *openai.Error {
	if ratePercent <= 0 {
		return nil
	}
	if rg.Intn(100) >= ratePercent {
		return nil
	}
	if len(types) == 0 {
		types = config.AllFailureTypes
	}
	return failureError(types[rg.Intn(len(types))], model)
}

func failureError(kind, model string) *openai.Error {
	switch kind {
	case config.FailureRateLimit:
		return openai.NewError(429, "Rate limit reached for "+model+" in organization org-xxx on requests per min (RPM): Limit 3, Used 3, Requested 1.")
	case config.FailureInvalidAPIKey:
		return openai.NewError(401, "Incorrect API key provided.")
	case config.FailureContextLength:
		return openai.NewParamError(400, "This model's maximum context length is 4096 tokens. However, your messages resulted in 4500 tokens.", "messages")
	case config.FailureServerError:
		return openai.NewError(503, "The server is overloaded or not ready yet.")
	case config.FailureInvalidRequest:
		return openai.NewParamError(400, "Invalid request: missing required parameter 'model'.", "model")
	default: // FailureModelNotFound
		return openai.NewParamError(404, "The model '"+model+"-nonexistent' does not exist", "model")
	}
}
