package comparison

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Mechanism is one serving mechanism that differs between the guide and the baseline, with the
// two values and what the difference means: the report's answer to "why are these two
// configurations different?" (queueing, batch size, preemptions, prefix-cache hits).
type Mechanism struct {
	Mechanism string  `json:"mechanism"`
	Metric    string  `json:"metric"`
	Guide     float64 `json:"guide"`
	Baseline  float64 `json:"baseline"`
	Says      string  `json:"says"`
	// weight orders the mechanisms: how large the difference is for its kind.
	weight float64
}

// mechanismRule says when a mechanism metric's difference matters and how to say it.
type mechanismRule struct {
	metric, mechanism string
	// differs reports whether guide g and baseline b differ enough to name, and how much
	// (the ordering weight).
	differs func(g, b float64) (bool, float64)
	says    func(g, b float64) string
}

// relative is |g - b| over the larger, when the larger is at least floor.
func relative(floor, threshold float64) func(g, b float64) (bool, float64) {
	return func(g, b float64) (bool, float64) {
		hi := math.Max(math.Abs(g), math.Abs(b))
		if hi < floor {
			return false, 0
		}
		r := math.Abs(g-b) / hi
		return r >= threshold, r
	}
}

var mechanismRules = []mechanismRule{
	{"queue_depth", "queueing", relative(1, 0.5), func(g, b float64) string {
		return fmt.Sprintf("requests waited for a place in the batch: a mean of %.1f waiting (guide) against %.1f (baseline), which adds to TTFT", g, b)
	}},
	{"running_requests_per_endpoint", "batch size", relative(1, 0.2), func(g, b float64) string {
		return fmt.Sprintf("%.1f requests ran at once per replica (guide) against %.1f (baseline): a larger batch makes each step, so each token, slower, and serves more at once", g, b)
	}},
	{"tokens_per_step", "batch size", relative(1, 0.2), func(g, b float64) string {
		return fmt.Sprintf("each engine step computed %.1f tokens (guide) against %.1f (baseline)", g, b)
	}},
	{"preemptions", "preemptions", func(g, b float64) (bool, float64) {
		return g != b && math.Max(g, b) >= 1, math.Abs(g-b) / math.Max(g, b)
	}, func(g, b float64) string {
		return fmt.Sprintf("the KV cache ran out and requests were preempted and recomputed: %.0f times (guide) against %.0f (baseline)", g, b)
	}},
	{"prefix_cache_hit_rate", "cache hits", func(g, b float64) (bool, float64) {
		d := math.Abs(g - b)
		return d >= 0.05, d
	}, func(g, b float64) string {
		return fmt.Sprintf("%.0f %% of prompt tokens came from the prefix cache (guide) against %.0f %% (baseline): hits skip their prefill", 100*g, 100*b)
	}},
}

// mechanisms names what differs in the two runs' mechanism_metrics, largest difference first.
func mechanisms(gm, bm map[string]any) []Mechanism {
	out := []Mechanism{}
	for _, r := range mechanismRules {
		g, gok := number(gm[r.metric])
		b, bok := number(bm[r.metric])
		if !gok || !bok || !finite(g) || !finite(b) {
			continue
		}
		if ok, w := r.differs(g, b); ok {
			out = append(out, Mechanism{Mechanism: r.mechanism, Metric: r.metric, Guide: round(g, 3), Baseline: round(b, 3), Says: r.says(g, b), weight: w})
		}
	}
	slices.SortStableFunc(out, func(x, y Mechanism) int { return cmp.Compare(y.weight, x.weight) })
	return out
}
