package analysis

// Summary is a simulation task's result.summary (and summary.json). Field names are the Lens
// contract (NOTES.md, loadgen-eval-anchors.md 5.1). Every number is finite; distributions with no
// values are null; timelines are [] (never null) when there is nothing to plot.
type Summary struct {
	TotalRequests int64 `json:"total_requests"` // requests sent, each with a record
	// ScheduledRequests is how many requests the run's schedule held (after range and scale
	// factor), SentRequests how many of them were sent (= total_requests). NotReleasedRequests is
	// the difference: requests never released, for the reasons NotReleasedByReason counts
	// (after_duration: due after duration_seconds; waiting_on_unsent: they waited on a request
	// that was never sent; run_ended: the run was stopped or its grace period ran out first).
	// The first and third are null when the backend cannot tell (AIPerf keeps no schedule).
	ScheduledRequests   *int64           `json:"scheduled_requests"`
	SentRequests        int64            `json:"sent_requests"`
	NotReleasedRequests *int64           `json:"not_released_requests"`
	NotReleasedByReason map[string]int64 `json:"not_released_by_reason"`

	SuccessfulRequests int64   `json:"successful_requests"`
	FailedRequests     int64   `json:"failed_requests"`
	SuccessRate        float64 `json:"success_rate"` // percent of total
	// DurationSeconds is Options.DurationSeconds when set, else the request window (kept with
	// this meaning for existing clients; ConfiguredDurationSeconds and MeasuredDurationSeconds
	// name the two apart).
	DurationSeconds float64 `json:"duration_seconds"`
	// ConfiguredDurationSeconds is the run's configured duration (Options.DurationSeconds); null
	// when the run was measured over what it did (stopped, failed, or no duration given).
	ConfiguredDurationSeconds *float64 `json:"configured_duration_seconds"`
	// MeasuredDurationSeconds is the request window every rate below divides by: the last
	// completion minus the first start.
	MeasuredDurationSeconds float64 `json:"measured_duration_seconds"`
	// Rates divide by the request window: last completion - first start.
	ThroughputRPS      float64 `json:"throughput_rps"` // all completed requests per second
	ThroughputTPS      float64 `json:"throughput_tps"` // output tokens per second
	TotalInputTokens   float64 `json:"total_input_tokens"`
	TotalOutputTokens  float64 `json:"total_output_tokens"`
	InputThroughputTPS float64 `json:"input_throughput_tps"`
	TotalThroughputTPS float64 `json:"total_throughput_tps"` // (input + output) tokens per second
	RequestErrorRate   float64 `json:"request_error_rate"`   // percent of total that failed
	// EffectiveConcurrency is the time-averaged number of requests in flight (Little's law: the
	// sum of every request's latency over the window).
	EffectiveConcurrency float64 `json:"effective_concurrency"`

	Latency *Distribution `json:"latency"` // successful requests
	TTFT    *Distribution `json:"ttft"`    // successful requests that reported a first token
	TPOT    *Distribution `json:"tpot"`    // successful requests with two or more output tokens
	Drift   *Drift        `json:"drift"`   // every request: started - scheduled
	// SessionTimelineDrift is how far requests of sessions started from where the recorded
	// timeline of their session (a root session and its subagents, shifted to the root's first
	// release) puts them, in ms; positive is later than recorded. Null when the trace has no
	// recorded session timeline.
	SessionTimelineDrift *Distribution `json:"session_timeline_drift"`

	StatusCodeBreakdown []StatusCodeCount `json:"status_code_breakdown"`
	// FailureCauses groups the failed requests by status and error message (numbers in the
	// message folded, so "resulted in 4500 tokens" and "in 5200 tokens" are one cause), most
	// frequent first, at most MaxFailureCauses of them; [] when nothing failed.
	FailureCauses []FailureCause `json:"failure_causes"`
	// ClientErrorRequests counts requests that got no HTTP status (transport error, timeout).
	ClientErrorRequests int64 `json:"client_error_requests"`

	CompletionTimeline []CompletionBin `json:"completion_timeline"`
	LatencyTimeline    []LatencyBin    `json:"latency_timeline"`
	TTFTTimeline       []LatencyBin    `json:"ttft_timeline"`
	TPOTTimeline       []LatencyBin    `json:"tpot_timeline"`
	ThroughputTimeline []ThroughputBin `json:"throughput_timeline"`
	ErrorTimeline      []ErrorBin      `json:"error_timeline"`

	// Goodput is null and GoodputTimeline [] unless the task set an SLO.
	Goodput         *Goodput     `json:"goodput"`
	GoodputTimeline []GoodputBin `json:"goodput_timeline"`
}

// Distribution summarises one per-request metric in milliseconds; percentiles are nearest rank.
type Distribution struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MinMs  float64 `json:"min_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Drift is how late sends left versus the schedule, in milliseconds (negative: early).
type Drift struct {
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// StatusCodeCount is one row of status_code_breakdown; StatusCode is null for requests that got
// no response. Rows are sorted by code with null last.
type StatusCodeCount struct {
	StatusCode *int    `json:"status_code"`
	Count      int64   `json:"count"`
	Percentage float64 `json:"percentage"`
}

// CompletionBin counts arrivals (by schedule) and completions (by completion time).
type CompletionBin struct {
	StartSeconds       float64 `json:"start_seconds"`
	EndSeconds         float64 `json:"end_seconds"`
	ArrivedRequests    int64   `json:"arrived_requests"`
	CompletedRequests  int64   `json:"completed_requests"`
	SuccessfulRequests int64   `json:"successful_requests"`
	FailedRequests     int64   `json:"failed_requests"`
	// ClientTimeoutRequests: failed with no HTTP status; BackendErrorRequests: failed with one.
	ClientTimeoutRequests int64 `json:"client_timeout_requests"`
	BackendErrorRequests  int64 `json:"backend_error_requests"`
	CumulativeArrived     int64 `json:"cumulative_arrived"`
	CumulativeCompleted   int64 `json:"cumulative_completed"`
}

// LatencyBin groups one metric of successful requests by the time they were sent. Average and
// p95 are null for a bin without values; the arrival rate counts every request sent in the bin.
type LatencyBin struct {
	StartSeconds      float64  `json:"start_seconds"`
	EndSeconds        float64  `json:"end_seconds"`
	RequestCount      int64    `json:"request_count"`
	RequestArrivalRPS float64  `json:"request_arrival_rps"`
	AverageLatencyMs  *float64 `json:"average_latency_ms"`
	P95LatencyMs      *float64 `json:"p95_latency_ms"`
}

// ThroughputBin: arrivals by send time, completions and their output tokens by completion time.
type ThroughputBin struct {
	StartSeconds         float64 `json:"start_seconds"`
	EndSeconds           float64 `json:"end_seconds"`
	RequestArrivalRPS    float64 `json:"request_arrival_rps"`
	RequestCompletionRPS float64 `json:"request_completion_rps"`
	TokenThroughputTPS   float64 `json:"token_throughput_tps"`
	Arrived              int64   `json:"arrived"`
	Completed            int64   `json:"completed"`
	OutputTokens         float64 `json:"output_tokens"`
}

// ErrorBin counts failures by completion time; the rate is of the requests completed in the bin.
type ErrorBin struct {
	StartSeconds       float64 `json:"start_seconds"`
	EndSeconds         float64 `json:"end_seconds"`
	FailedRequests     int64   `json:"failed_requests"`
	ErrorRatePercent   float64 `json:"error_rate_percent"`
	CumulativeFailures int64   `json:"cumulative_failures"`
}

// Goodput: requests that succeeded and met every TTFT/TPOT objective that is set.
type Goodput struct {
	TTFTSLOMs           *float64 `json:"ttft_slo_ms"`
	TPOTSLOMs           *float64 `json:"tpot_slo_ms"`
	ErrorRateSLOPercent *float64 `json:"error_rate_slo_percent"`
	GoodRequests        int64    `json:"good_requests"`
	GoodRequestPercent  float64  `json:"good_request_percent"` // of all requests
	GoodputRPS          float64  `json:"goodput_rps"`          // good requests over the window
	// ErrorRateSLOMet is null when no error-rate objective is set.
	ErrorRateSLOMet *bool `json:"error_rate_slo_met"`
}

// GoodputBin counts completions and good completions by completion time.
type GoodputBin struct {
	StartSeconds         float64 `json:"start_seconds"`
	EndSeconds           float64 `json:"end_seconds"`
	CompletedRequests    int64   `json:"completed_requests"`
	GoodRequests         int64   `json:"good_requests"`
	RequestThroughputRPS float64 `json:"request_throughput_rps"`
	GoodputRPS           float64 `json:"goodput_rps"`
}

// Live is the task's live_summary while it runs: cheap counts, no timelines.
type Live struct {
	CompletedRequests  int64 `json:"completed_requests"`
	SuccessfulRequests int64 `json:"successful_requests"`
}
