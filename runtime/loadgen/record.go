package loadgen

// Record is one request's outcome, one JSON line of a run's per-request.jsonl artifact. Times
// are seconds relative to the run's start (the schedule's zero) or Config.Origin when set, so
// records of one run (or of back-to-back runs sharing an origin) compare directly; durations are
// milliseconds. The result analyzer reads nothing else.
type Record struct {
	RequestID int64  `json:"request_id"`           // 1-based, in schedule order
	SessionID string `json:"session_id,omitempty"` // trace session, when the format has them
	Turn      int    `json:"turn"`                 // 0-based turn within the session (0 for a request without one)
	// StatusCode is the HTTP status; nil when no response arrived (transport error, timeout).
	StatusCode *int `json:"status_code"`
	// Successful: a 2xx response that completed without a transport error or timeout.
	Successful bool    `json:"successful"`
	Error      *string `json:"error"`
	// ScheduledAtSeconds is when the schedule wanted the request sent; StartedAtSeconds when it
	// was; their difference is the schedule drift.
	ScheduledAtSeconds  float64  `json:"scheduled_at_seconds"`
	StartedAtSeconds    float64  `json:"started_at_seconds"`
	FirstTokenAtSeconds *float64 `json:"first_token_at_seconds"`
	CompletedAtSeconds  float64  `json:"completed_at_seconds"`
	LatencyMs           float64  `json:"latency_ms"` // response complete - request sent
	TTFTMs              *float64 `json:"ttft_ms"`    // first content token - request sent
	// TPOTMs = (last token - first token) / (output tokens - 1), vLLM's definition; nil with
	// fewer than two output tokens.
	TPOTMs *float64 `json:"tpot_ms"`
	// TimelineDriftMs is how far the request started from where the recorded timeline of its
	// session tree puts it: (started - the root session's first release) - (recorded - the root's
	// first recorded position). Positive is later than recorded. Only for requests of a session
	// with recorded positions (Request.RecordedMs).
	TimelineDriftMs *float64       `json:"timeline_drift_ms,omitempty"`
	InputTokens     float64        `json:"input_tokens"`
	OutputTokens    float64        `json:"output_tokens"`
	Metadata        map[string]any `json:"metadata"`
}
