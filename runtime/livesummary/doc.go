// Package livesummary owns the live summary a running benchmark reports in its live_metrics:
// TTFT p50/p90/p99, TPOT and end-to-end latency p50/p99, request and output-token throughput
// over the last WindowSeconds and overall, the error rate and the top error causes, computed
// incrementally as records arrive in bounded memory.
//
// The distributions are DDSketches (github.com/DataDog/sketches-go, whose one home this package
// is): every reported percentile is within RelativeAccuracy (1%) of the true value of its rank,
// and two sketches merge into the sketch of the union with the same guarantee, so the summaries
// of a run's parallel workers merge exactly (never by averaging percentiles). A summary is
// encoded whole (MarshalJSON) for a worker's record and decoded by the run's owner to merge.
//
// It imports only the standard library and sketches-go.
package livesummary
