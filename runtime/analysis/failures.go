package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// MaxFailureCauses is how many causes Summary.FailureCauses lists.
const MaxFailureCauses = 5

// maxTrackedCauses bounds the distinct causes counted: past it, new ones count as "other", so
// a run whose every error differs cannot grow the accumulator.
const maxTrackedCauses = 256

// maxCauseMessage bounds one cause's message.
const maxCauseMessage = 300

// FailureCause is one kind of failure and how many requests it failed.
type FailureCause struct {
	StatusCode *int    `json:"status_code"` // null: no HTTP response (transport error, timeout)
	Message    string  `json:"message"`     // the error, numbers folded to N
	Count      int64   `json:"count"`
	Percentage float64 `json:"percentage"` // of the failed requests
}

type causeKey struct {
	status  int // -1: no status
	message string
}

// causeCounter counts failures by cause.
type causeCounter struct {
	counts map[causeKey]int64
	order  []causeKey // first seen first, so ties sort stably
}

func (c *causeCounter) add(status *int, errMsg *string) {
	key := causeKey{status: -1}
	if status != nil {
		key.status = *status
	}
	if errMsg != nil {
		key.message = foldNumbers(*errMsg)
	}
	if c.counts == nil {
		c.counts = map[causeKey]int64{}
	}
	if _, seen := c.counts[key]; !seen {
		if len(c.counts) >= maxTrackedCauses {
			key.message = "other errors"
		}
		if _, seen := c.counts[key]; !seen {
			c.order = append(c.order, key)
		}
	}
	c.counts[key]++
}

func (c *causeCounter) top(failed int64) []FailureCause {
	keys := slices.Clone(c.order)
	slices.SortStableFunc(keys, func(a, b causeKey) int { return cmp.Compare(c.counts[b], c.counts[a]) })
	out := []FailureCause{}
	for _, k := range keys[:min(len(keys), MaxFailureCauses)] {
		fc := FailureCause{Message: k.message, Count: c.counts[k], Percentage: percent(c.counts[k], failed)}
		if k.status >= 0 {
			status := k.status
			fc.StatusCode = &status
		}
		out = append(out, fc)
	}
	return out
}

// foldNumbers replaces each run of digits with N and bounds the length, so messages that differ
// only in their numbers count as one cause.
func foldNumbers(msg string) string {
	var b strings.Builder
	inDigits := false
	for _, r := range strings.TrimSpace(msg) {
		if r >= '0' && r <= '9' {
			if !inDigits {
				b.WriteByte('N')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteRune(r)
		if b.Len() >= maxCauseMessage {
			b.WriteString("…")
			break
		}
	}
	return b.String()
}

// Thresholds of the result's warnings.
const (
	// LowSuccessRate is the success rate (percent) under which a result warns.
	LowSuccessRate = 90.0
	// SharedCauseShare is the share (percent) of the failures one cause must have to be named
	// as the reason.
	SharedCauseShare = 50.0
)

// Warnings says what in a summary needs the reader's attention, each with what to change: a low
// success rate, and failures that mostly share one cause. A run with no failures has none.
func Warnings(s Summary) []string {
	var out []string
	if s.TotalRequests > 0 && s.SuccessRate < LowSuccessRate {
		out = append(out, fmt.Sprintf("only %d of %d requests succeeded (%.1f%%): latency and TTFT describe only the requests that succeeded, so they do not show how the endpoint handles this load",
			s.SuccessfulRequests, s.TotalRequests, s.SuccessRate))
	}
	if s.FailedRequests == 0 || len(s.FailureCauses) == 0 {
		return out
	}
	top := s.FailureCauses[0]
	if top.Percentage < SharedCauseShare {
		return out
	}
	status := "no HTTP response"
	if top.StatusCode != nil {
		status = fmt.Sprintf("HTTP %d", *top.StatusCode)
	}
	msg := top.Message
	if msg == "" {
		msg = "no error message"
	}
	out = append(out, fmt.Sprintf("%d of %d failed requests share one cause, %s: %q; %s",
		top.Count, s.FailedRequests, status, msg, adviceFor(top)))
	return out
}

// adviceFor says what to change for a common cause of failure.
func adviceFor(c FailureCause) string {
	lower := strings.ToLower(c.Message)
	code := 0
	if c.StatusCode != nil {
		code = *c.StatusCode
	}
	switch {
	case strings.Contains(lower, "context length") || strings.Contains(lower, "max_model_len") ||
		strings.Contains(lower, "maximum context"):
		return "the trace's prompts are longer than the endpoint's context: raise its context length (vLLM and inference-sim: --max-model-len) or replay a trace or range with shorter prompts"
	case code == 401 || code == 403:
		return "the endpoint refused the credentials: check api_key"
	case code == 404:
		return "the endpoint has no such route or model: check endpoint_url (it should end in /v1) and model_name"
	case code == 429:
		return "the endpoint is rate limiting: lower the load (a smaller scale_factor) or raise its limits"
	case code == 503 || strings.Contains(lower, "queue") || strings.Contains(lower, "overload"):
		return "the endpoint is overloaded: lower the load (a smaller scale_factor) or give it more capacity (for inference-sim, --max-num-seqs and --max-waiting-queue-length)"
	case code >= 500:
		return "the endpoint failed while serving: see its logs"
	case code == 0 && (strings.Contains(lower, "timeout") || strings.Contains(lower, "deadline")):
		return "requests timed out: lower the load or raise trace_timeout_seconds"
	case code == 0:
		return "the endpoint could not be reached or dropped connections: check that it is running at endpoint_url"
	case code == 400 || code == 422:
		return "the endpoint refused the requests as invalid: see the per-request-jsonl artifact or GET /tasks/{id}/response-code-issues for the bodies it refused"
	}
	return "see GET /tasks/{id}/response-code-issues?status_code=" + fmt.Sprint(code) + " for the requests it failed"
}
