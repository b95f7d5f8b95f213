package evalrun

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/lensfn/lensfn/events"
)

// RepeatedMetrics are the headline metrics whose spread a run's repetitions give and whose
// guide/baseline ratios a comparison gives confidence intervals for, in the report's order.
var RepeatedMetrics = []string{"throughput_tps", "input_throughput_tps", "throughput_rps", "ttft_ms", "itl_ms", "tpot_ms",
	"request_latency_ms", "error_rate"}

// BootstrapReplicates is how many request-level bootstrap replicates a run keeps per
// repetition and metric: enough for the comparison's second stage to draw from (it resamples the
// repetitions, then one replicate of each), few enough that a 20-repetition run keeps ~130 KB.
const BootstrapReplicates = 100

// BootstrapMethod says how the replicates were made.
const BootstrapMethod = "per repetition: requests resampled with replacement; latency metrics are the resample's p50, " +
	"error_rate its failure share, throughput its output tokens (or successes) over the repetition's time scaled by the " +
	"resample's mean latency against the repetition's (the window those requests would have taken at the same concurrency)"

// Bootstrap is what a run keeps for the confidence intervals of the comparisons it takes part
// in: per repetition the headline estimate and request-level bootstrap replicates of each of
// RepeatedMetrics, made with Seed (so a run's replicates are reproducible).
type Bootstrap struct {
	SchemaVersion int                   `json:"schema_version" doc:"1"`
	Method        string                `json:"method" doc:"how the replicates were made"`
	Replicates    int                   `json:"replicates" doc:"replicates per repetition and metric"`
	Seed          uint64                `json:"seed" doc:"the seed of the first repetition's resampling (repetition r uses seed + r)"`
	Repetitions   []BootstrapRepetition `json:"repetitions" doc:"one per repetition, in order"`
}

// BootstrapRepetition is one repetition's estimates and replicates (null or absent: the metric
// had no value, e.g. no successful request).
type BootstrapRepetition struct {
	Repetition int                  `json:"repetition"`
	Requests   int64                `json:"requests"`
	Estimate   map[string]*float64  `json:"estimate"`
	Replicates map[string][]float64 `json:"replicates"`
}

// BootstrapOf makes one repetition's entry from its builder and metrics.
func BootstrapOf(rep int, b *Builder, m Metrics, seed uint64) BootstrapRepetition {
	out := BootstrapRepetition{Repetition: rep, Requests: b.Count(), Estimate: map[string]*float64{}, Replicates: b.Replicates(BootstrapReplicates, seed)}
	for _, k := range RepeatedMetrics {
		if v, ok := m.Float(k); ok {
			out.Estimate[k] = &v
		} else {
			out.Estimate[k] = nil
		}
	}
	return out
}

// Replicates are k request-level bootstrap replicates of RepeatedMetrics over b's requests
// (BootstrapMethod), drawn with a generator seeded by seed. A metric without a value in a
// replicate (no successful request drawn) is left out of it.
//
// A replicate draws n requests with replacement as counts per request, then reads each
// latency metric's p50 off the requests in that metric's sorted order (a pass over the counts
// instead of selecting among n copied values): the same distribution as resampling the values,
// ~10x faster, so a 100,000-request repetition costs tenths of a second, not seconds.
func (b *Builder) Replicates(k int, seed uint64) map[string][]float64 {
	out := map[string][]float64{}
	n := len(b.rows)
	elapsed := b.elapsed()
	if n == 0 || elapsed <= 0 {
		return out
	}
	// The requests' numbers, in arrays of their own (the columns are chunked).
	s := b.samples
	ok := make([]bool, n)
	latency, in, outTok := make([]float64, n), make([]float64, n), make([]float64, n)
	perMetric := map[string][]float64{"ttft_ms": make([]float64, n), "tpot_ms": make([]float64, n), "itl_ms": make([]float64, n),
		"request_latency_ms": latency}
	meanLatency := 0.0
	for i, r := range b.rows {
		row := int(r)
		ttft, tpot, itl := perMetric["ttft_ms"], perMetric["tpot_ms"], perMetric["itl_ms"]
		ttft[i], tpot[i], itl[i], latency[i] = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if ok[i] = s.ok.at(row); !ok[i] {
			continue
		}
		latency[i], in[i], outTok[i] = s.latency.at(row), s.inTok.at(row), s.outTok.at(row)
		meanLatency += latency[i]
		ttft[i], tpot[i] = s.ttft.at(row), s.tpot.at(row)
		if !math.IsNaN(ttft[i]) && outTok[i] >= 2 {
			itl[i] = (latency[i] - ttft[i]) / (outTok[i] - 1)
		}
	}
	if b.successes > 0 {
		meanLatency /= float64(b.successes)
	}
	// Each latency metric's requests that have a value, in the order of their values.
	order := map[string][]int32{}
	for metric, values := range perMetric {
		var idx []int32
		for i, v := range values {
			if !math.IsNaN(v) {
				idx = append(idx, int32(i))
			}
		}
		slices.SortFunc(idx, func(a, c int32) int { return cmpFloat(values[a], values[c]) })
		order[metric] = idx
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	counts := make([]int32, n)
	add := func(metric string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[metric] = append(out[metric], round(v, 4))
		}
	}
	for range k {
		clear(counts)
		var good, failed int
		var inSum, outSum, latencySum float64
		for range n {
			i := rng.IntN(n)
			counts[i]++
			if !ok[i] {
				failed++
				continue
			}
			good++
			inSum, outSum, latencySum = inSum+in[i], outSum+outTok[i], latencySum+latency[i]
		}
		window := elapsed
		if good > 0 && meanLatency > 0 {
			window = elapsed * (latencySum / float64(good)) / meanLatency
		}
		add("throughput_tps", outSum/window)
		add("input_throughput_tps", inSum/window)
		add("throughput_rps", float64(good)/window)
		add("error_rate", 100*float64(failed)/float64(n))
		for _, metric := range []string{"request_latency_ms", "ttft_ms", "tpot_ms", "itl_ms"} {
			add(metric, countedMedian(order[metric], perMetric[metric], counts))
		}
	}
	return out
}

// countedMedian is the p50, interpolated as distribution does, of a resample in which request
// i was drawn counts[i] times; sorted lists the requests with a value in value order. NaN when
// none of them was drawn.
func countedMedian(sorted []int32, values []float64, counts []int32) float64 {
	m := 0
	for _, i := range sorted {
		m += int(counts[i])
	}
	if m == 0 {
		return math.NaN()
	}
	pos := 0.5 * float64(m-1)
	lo := int(math.Floor(pos))
	frac := pos - float64(lo)
	seen := 0
	for j, i := range sorted {
		seen += int(counts[i])
		if seen <= lo {
			continue
		}
		v := values[i]
		if frac == 0 || seen > lo+1 {
			return v // the next rank is the same request
		}
		for _, next := range sorted[j+1:] {
			if counts[next] > 0 {
				return v + (values[next]-v)*frac
			}
		}
		return v
	}
	return math.NaN()
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RepetitionSpread is the spread of one metric across a run's repetitions.
type RepetitionSpread struct {
	Repetitions int      `json:"repetitions"`
	Mean        float64  `json:"mean"`
	StdDev      float64  `json:"stddev" doc:"sample standard deviation (n - 1)"`
	Min         float64  `json:"min"`
	Max         float64  `json:"max"`
	CVPercent   *float64 `json:"cv_percent" doc:"stddev / mean in percent; null when the mean is 0"`
}

// Spread is the spread of RepeatedMetrics across repetitions' metrics (metrics a repetition
// has no value of are left out of its spread; a metric no repetition has is absent).
func Spread(reps []Metrics) map[string]RepetitionSpread {
	out := map[string]RepetitionSpread{}
	for _, k := range RepeatedMetrics {
		var values []float64
		for _, m := range reps {
			if v, ok := m.Float(k); ok {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			continue
		}
		sum := 0.0
		for _, v := range values {
			sum += v
		}
		mean := sum / float64(len(values))
		sq := 0.0
		for _, v := range values {
			sq += (v - mean) * (v - mean)
		}
		sd := 0.0
		if len(values) > 1 {
			sd = math.Sqrt(sq / float64(len(values)-1))
		}
		s := RepetitionSpread{Repetitions: len(values), Mean: round(mean, 4), StdDev: round(sd, 4),
			Min: round(slices.Min(values), 4), Max: round(slices.Max(values), 4)}
		if mean != 0 {
			cv := round(100*sd/math.Abs(mean), 3)
			s.CVPercent = &cv
		}
		out[k] = s
	}
	return out
}

// RepetitionSummary is what a run keeps of one repetition: its index, its benchmark time and
// the metrics the spread and the SLA verdict per repetition read.
func RepetitionSummary(rep int, m Metrics) map[string]any {
	out := map[string]any{"repetition": rep}
	for _, k := range append([]string{"request_count", "success_count", "success_rate", "benchmark_time_seconds",
		"latency_distributions"}, RepeatedMetrics...) {
		out[k] = m[k]
	}
	return out
}

// CountRepetitionsMet adds to v, for each check and overall, how many of the repetitions'
// metrics meet the targets (nothing without targets or repetitions).
func CountRepetitionsMet(v *events.SLAVerdict, reps []Metrics, t *events.SLATargets) {
	if v == nil || t == nil || len(reps) == 0 {
		return
	}
	n, all := len(reps), 0
	met := map[string]int{}
	for _, m := range reps {
		rv := EvaluateSLA(m, t)
		if rv.Met != nil && *rv.Met {
			all++
		}
		for name, c := range rv.Checks {
			if c.Met != nil && *c.Met {
				met[name]++
			}
		}
	}
	for name, c := range v.Checks {
		c.RepetitionsMet, c.Repetitions = ptr(met[name]), ptr(n)
		v.Checks[name] = c
	}
	v.RepetitionsMet, v.Repetitions = ptr(all), ptr(n)
}
