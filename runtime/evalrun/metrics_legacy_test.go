package evalrun

// legacyBuilder is the metrics builder as it was before the builders of a run shared one set of
// per-request numbers (Samples), kept verbatim as the reference the shared builders must match
// byte for byte.

import (
	"math"
	"math/rand/v2"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// legacyBuilder turns per-request records into the metrics block of reference/lens-evaluation.md §5.
// It keeps a few numbers per request (never the records), so a 100,000-request run costs a few
// MB. Distributions are over successful requests, as inference-perf reports them; percentiles
// interpolate linearly between order statistics (numpy's default, which inference-perf uses).
type legacyBuilder struct {
	latency, ttft, tpot, ntpot, inTok, outTok, delay []float64
	gaps                                             []float64
	gapsSeen                                         int64
	rng                                              *rand.Rand

	successes, failures, emptyOutputs int64
	good                              int64
	totalIn, totalOut                 float64
	firstStart, lastEnd               float64
	scheduled                         int64
	constraints                       map[string]float64 // ms, by metric
}

// newLegacyBuilder returns an empty builder; targets' TTFT/TPOT limits define SLO goodput.
func newLegacyBuilder(targets *events.SLATargets) *legacyBuilder {
	b := &legacyBuilder{firstStart: math.Inf(1), lastEnd: math.Inf(-1), rng: rand.New(rand.NewPCG(1, 2)), constraints: map[string]float64{}}
	if targets != nil {
		if targets.TTFTMs != nil {
			b.constraints["ttft"] = *targets.TTFTMs
		}
		if targets.TPOTMs != nil {
			b.constraints["tpot"] = *targets.TPOTMs
		}
	}
	return b
}

// Add takes one measured request's record and its inter-token gaps (ms; may be nil).
func (b *legacyBuilder) Add(rec loadgen.Record, gaps []float64) {
	b.scheduled++
	b.firstStart = min(b.firstStart, rec.StartedAtSeconds)
	b.lastEnd = max(b.lastEnd, rec.CompletedAtSeconds)
	b.delay = append(b.delay, 1000*(rec.StartedAtSeconds-rec.ScheduledAtSeconds))
	if !rec.Successful {
		b.failures++
		return
	}
	b.successes++
	b.latency = append(b.latency, rec.LatencyMs)
	b.inTok = append(b.inTok, rec.InputTokens)
	b.outTok = append(b.outTok, rec.OutputTokens)
	b.totalIn += rec.InputTokens
	b.totalOut += rec.OutputTokens
	if rec.OutputTokens > 0 {
		b.ntpot = append(b.ntpot, rec.LatencyMs/rec.OutputTokens)
	} else {
		b.emptyOutputs++
	}
	if rec.TTFTMs != nil {
		b.ttft = append(b.ttft, *rec.TTFTMs)
	}
	if rec.TPOTMs != nil {
		b.tpot = append(b.tpot, *rec.TPOTMs)
	}
	if b.isGood(rec) {
		b.good++
	}
	for _, g := range gaps {
		b.gapsSeen++
		if len(b.gaps) < maxPooledGaps {
			b.gaps = append(b.gaps, g)
		} else if j := b.rng.Int64N(b.gapsSeen); j < maxPooledGaps {
			b.gaps[j] = g
		}
	}
}

func (b *legacyBuilder) isGood(rec loadgen.Record) bool {
	if rec.OutputTokens <= 0 {
		return false
	}
	if limit, ok := b.constraints["ttft"]; ok && (rec.TTFTMs == nil || *rec.TTFTMs > limit) {
		return false
	}
	if limit, ok := b.constraints["tpot"]; ok && rec.TPOTMs != nil && *rec.TPOTMs > limit {
		return false
	}
	return true
}

// Metrics computes the metrics block. source names where the records are (the artifact).
func (b *legacyBuilder) Metrics(artifactPath string) Metrics {
	count := b.successes + b.failures
	elapsed := 0.0
	if count > 0 {
		elapsed = max(b.lastEnd-b.firstStart, 0)
	}
	rate := func(x float64) any {
		if elapsed <= 0 {
			return nil
		}
		return round(x/elapsed, 3)
	}
	m := Metrics{
		"throughput_tps":          rate(b.totalOut),
		"input_throughput_tps":    rate(b.totalIn),
		"total_throughput_tps":    rate(b.totalIn + b.totalOut),
		"throughput_rps":          rate(float64(b.successes)),
		"total_input_tokens":      b.totalIn,
		"total_output_tokens":     b.totalOut,
		"success_count":           b.successes,
		"failure_count":           b.failures,
		"request_count":           count,
		"scheduled_request_count": b.scheduled,
		"benchmark_time_seconds":  round(elapsed, 3),
		"success_rate":            nil,
		"error_rate":              nil,
	}
	if count > 0 {
		m["success_rate"] = round(100*float64(b.successes)/float64(count), 3)
		m["error_rate"] = round(100*float64(b.failures)/float64(count), 3)
	}
	dists := map[string]any{}
	for name, values := range map[string][]float64{"request_latency": b.latency, "ttft": b.ttft, "itl": b.gaps, "tpot": b.tpot, "ntpot": b.ntpot} {
		d := distribution(values, "_ms")
		dists[name] = d
		scalar := name + "_ms"
		if p50, ok := d["p50_ms"]; ok {
			m[scalar] = p50
		} else {
			m[scalar] = nil
		}
	}
	m["latency_distributions"] = dists
	m["token_distributions"] = map[string]any{"input": distribution(b.inTok, ""), "output": distribution(b.outTok, "")}
	m["schedule_delay"] = distribution(b.delay, "_ms")
	m["request_slo_goodput"] = b.goodput(elapsed, artifactPath)
	return m
}

func (b *legacyBuilder) goodput(elapsed float64, artifactPath string) map[string]any {
	count := b.successes + b.failures
	if count == 0 || elapsed <= 0 {
		return map[string]any{"schema_version": 1, "status": "unavailable", "reason": "no request completed in the measured window"}
	}
	constraints := map[string]float64{}
	for k, v := range b.constraints {
		constraints[k] = v / 1000
	}
	return map[string]any{
		"schema_version": 1, "status": "measured", "value": round(float64(b.good)/elapsed, 6),
		"good_requests": b.good, "request_count": count, "success_count": b.successes,
		"empty_output_count": b.emptyOutputs, "duration_seconds": round(elapsed, 3),
		"constraints_seconds": constraints, "window": map[string]float64{"start": b.firstStart, "end": b.lastEnd},
		"source": "per-request records", "artifact_path": artifactPath,
		"formula": "successful requests with output whose TTFT and TPOT meet every configured limit / benchmark_time_seconds",
	}
}
