package inferencesim

import (
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"

	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// Bounds that keep any single request (or admin update) from exhausting
// the process. A request that exceeds one gets an OpenAI-style 400 that
// names the bound; none of them is reachable by the traffic the simulator
// stands in for (one prompt, n 1, max_tokens up to the context window).
const (
	// maxSequences bounds the choices of one request: n, and for
	// /v1/completions prompts x n, so a prompt list cannot bypass the n cap.
	maxSequences = 128
	// maxGeneratedUnits bounds the output of one request: every sequence's
	// token limit (max_tokens, or what is left of the context window)
	// times (1 + 2 x top_logprobs), summed over the sequences. 512 Ki units
	// are a 262,144-token answer twice over, or 12,787 tokens with 20
	// logprobs each (a 16 MB answer); see BENCHMARKS.md for the memory.
	maxGeneratedUnits = 1 << 19
	// maxEmbeddingInputs is OpenAI's limit on /v1/embeddings inputs;
	// maxEmbeddingValues bounds inputs x dimensions (~12 bytes of JSON
	// each).
	maxEmbeddingInputs     = 2048
	maxEmbeddingDimensions = 65536
	maxEmbeddingValues     = 1 << 21
	// maxToolArrayItems caps a generated array whatever its schema's
	// minItems says; maxToolArgBytes the arguments of one request's tool
	// calls (they are cut at max_tokens as well).
	maxToolArrayItems = 1024
	maxToolArgBytes   = 1 << 20
	// maxLoRAAdapters bounds the adapters a rank knows (--lora-modules plus
	// loaded ones); names are at most maxLoRANameLen bytes of
	// [A-Za-z0-9._:/@+-], paths at most maxLoRAPathLen bytes.
	maxLoRAAdapters = 256
	maxLoRANameLen  = 128
	maxLoRAPathLen  = 4096
	// Latency settings: a fixed delay (TTFT, KV transfer, prefill overhead
	// and the std-devs of whole prefill/transfer times) at most 10 minutes,
	// a per-token one at most 10 s, the load factor within 1-100. With these
	// the longest schedule (10 s x 100 x maxGeneratedUnits) stays far from
	// overflowing time.Duration.
	maxFixedLatency    = 10 * time.Minute
	maxPerTokenLatency = 10 * time.Second
	maxLoadFactor      = 100
	// maxTokenLen bounds --api-key and --admin-token.
	maxTokenLen = 1024
	// streamBatchBytes is how much of a stream is rendered ahead of the
	// socket: frames due at once leave in batches of about this size, so a
	// zero-latency stream of half a million tokens does not sit in memory
	// whole.
	streamBatchBytes = 64 << 10
)

// checkLatencyBounds refuses latency settings the flags and /admin/config
// must both refuse (one validation path: Config.Validate).
func checkLatencyBounds(p latency.Config) []error {
	var errs []error
	// Fixed delays first, then times per token, each in the core's order.
	for _, perToken := range []bool{false, true} {
		bound := maxFixedLatency
		if perToken {
			bound = maxPerTokenLatency
		}
		for _, f := range latency.DurationFlags {
			if v := *f.Field(&p); f.PerToken == perToken && v > bound {
				errs = append(errs, fmt.Errorf("--%s must not exceed %v, got %v", f.Name, bound, v))
			}
		}
	}
	// NaN fails both comparisons, so it is refused by the negated range.
	if f := p.TimeFactorUnderLoad; !(f >= 1 && f <= maxLoadFactor) {
		errs = append(errs, fmt.Errorf("--time-factor-under-load must be within 1-%d, got %v", maxLoadFactor, f))
	}
	return errs
}

// checkLoRA checks an adapter's name and path.
func checkLoRA(name, path string) error {
	if name == "" {
		return errors.New("lora_name is required")
	}
	if len(name) > maxLoRANameLen {
		return fmt.Errorf("lora_name must be at most %d characters", maxLoRANameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' ||
			c == '-' || c == ':' || c == '/' || c == '@' || c == '+') {
			return fmt.Errorf("lora_name %s may only contain letters, digits and . _ - : / @ +", strconv.Quote(name))
		}
	}
	if len(path) > maxLoRAPathLen {
		return fmt.Errorf("lora_path must be at most %d characters", maxLoRAPathLen)
	}
	for _, c := range []byte(path) {
		if c < 0x20 || c == 0x7f {
			return errors.New("lora_path must not contain control characters")
		}
	}
	return nil
}

// checkToken accepts an empty token (no authentication) or a header-safe one.
func checkToken(tok string) error {
	if len(tok) > maxTokenLen {
		return fmt.Errorf("must be at most %d characters", maxTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] >= 0x7f {
			return errors.New("must be printable ASCII without spaces")
		}
	}
	return nil
}

// validHostname accepts RFC 1123 host names: dot-separated labels of
// letters, digits and inner hyphens.
func validHostname(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

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
	if total > maxGeneratedUnits {
		what := "sequences x max_tokens"
		if g.topLogprobs > 0 {
			what += " x (1 + top_logprobs)"
		}
		return openai.NewParamError(400, "This request could generate "+strconv.Itoa(total)+" tokens ("+what+
			"), more than the simulator's limit of "+strconv.Itoa(maxGeneratedUnits)+
			" per request; lower max_tokens, n or the number of prompts.", "max_tokens")
	}
	return nil
}
