package limits

import (
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
	// MaxSequences bounds the choices of one request: n, and for
	// /v1/completions prompts x n, so a prompt list cannot bypass the n cap.
	MaxSequences = 128
	// MaxGeneratedUnits bounds the output of one request: every sequence's
	// token limit (max_tokens, or what is left of the context window)
	// times (1 + 2 x top_logprobs), summed over the sequences. 512 Ki units
	// are a 262,144-token answer twice over, or 12,787 tokens with 20
	// logprobs each (a 16 MB answer); see BENCHMARKS.md for the memory.
	MaxGeneratedUnits = 1 << 19
	// MaxEmbeddingInputs is OpenAI's limit on /v1/embeddings inputs;
	// MaxEmbeddingValues bounds inputs x dimensions (~12 bytes of JSON
	// each).
	MaxEmbeddingInputs     = 2048
	MaxEmbeddingDimensions = 65536
	MaxEmbeddingValues     = 1 << 21
	// MaxToolArrayItems caps a generated array whatever its schema's
	// minItems says; MaxToolArgBytes the arguments of one request's tool
	// calls (they are cut at max_tokens as well).
	MaxToolArrayItems = 1024
	MaxToolArgBytes   = 1 << 20
	// MaxLoRAAdapters bounds the adapters a rank knows (--lora-modules plus
	// loaded ones); names are at most MaxLoRANameLen bytes of
	// [A-Za-z0-9._:/@+-], paths at most MaxLoRAPathLen bytes.
	MaxLoRAAdapters = 256
	MaxLoRANameLen  = 128
	MaxLoRAPathLen  = 4096
	// Latency settings: a fixed delay (TTFT, KV transfer, prefill overhead
	// and the std-devs of whole prefill/transfer times) at most 10 minutes,
	// a per-token one at most 10 s, the load factor within 1-100. With these
	// the longest schedule (10 s x 100 x MaxGeneratedUnits) stays far from
	// overflowing time.Duration.
	MaxFixedLatency    = 10 * time.Minute
	MaxPerTokenLatency = 10 * time.Second
	MaxLoadFactor      = 100
	// MaxTokenLen bounds --api-key and --admin-token.
	MaxTokenLen = 1024
	// StreamBatchBytes is how much of a stream is rendered ahead of the
	// socket: frames due at once leave in batches of about this size, so a
	// zero-latency stream of half a million tokens does not sit in memory
	// whole.
	StreamBatchBytes = 64 << 10
)

// CheckLatency refuses latency settings the flags and /admin/config
// must both refuse (one validation path: Config.Validate).
func CheckLatency(p latency.Config) []error {
	var errs []error
	// Fixed delays first, then times per token, each in the core's order.
	for _, perToken := range []bool{false, true} {
		bound := MaxFixedLatency
		if perToken {
			bound = MaxPerTokenLatency
		}
		for _, f := range latency.DurationFlags {
			if v := *f.Field(&p); f.PerToken == perToken && v > bound {
				errs = append(errs, fmt.Errorf("--%s must not exceed %v, got %v", f.Name, bound, v))
			}
		}
	}
	// NaN fails both comparisons, so it is refused by the negated range.
	if f := p.TimeFactorUnderLoad; !(f >= 1 && f <= MaxLoadFactor) {
		errs = append(errs, fmt.Errorf("--time-factor-under-load must be within 1-%d, got %v", MaxLoadFactor, f))
	}
	return errs
}

// CheckLoRA checks an adapter's name and path.
func CheckLoRA(name, path string) error {
	if name == "" {
		return errors.New("lora_name is required")
	}
	if len(name) > MaxLoRANameLen {
		return fmt.Errorf("lora_name must be at most %d characters", MaxLoRANameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' ||
			c == '-' || c == ':' || c == '/' || c == '@' || c == '+') {
			return fmt.Errorf("lora_name %s may only contain letters, digits and . _ - : / @ +", strconv.Quote(name))
		}
	}
	if len(path) > MaxLoRAPathLen {
		return fmt.Errorf("lora_path must be at most %d characters", MaxLoRAPathLen)
	}
	for _, c := range []byte(path) {
		if c < 0x20 || c == 0x7f {
			return errors.New("lora_path must not contain control characters")
		}
	}
	return nil
}

// CheckToken accepts an empty token (no authentication) or a header-safe one.
func CheckToken(tok string) error {
	if len(tok) > MaxTokenLen {
		return fmt.Errorf("must be at most %d characters", MaxTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] >= 0x7f {
			return errors.New("must be printable ASCII without spaces")
		}
	}
	return nil
}

// ValidHostname accepts RFC 1123 host names: dot-separated labels of
// letters, digits and inner hyphens.
func ValidHostname(h string) bool {
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
