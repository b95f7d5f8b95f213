package comparison

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/lensfn/lensfn/runtime/evalrun"
)

// Verdicts of a metric's change, guide against baseline.
const (
	VerdictBetter        = "better"
	VerdictWorse         = "worse"
	VerdictNoSignificant = "no significant difference"
)

// Confidence is the level of the intervals; SignificanceIterations how many bootstrap
// iterations make them.
const (
	Confidence             = 0.95
	SignificanceIterations = 2000
)

// SignificanceMethod says how the intervals are made.
const SignificanceMethod = "hierarchical bootstrap over repetitions and requests: each iteration resamples each side's " +
	"repetitions with replacement, takes one request-level bootstrap replicate of each drawn repetition, and averages " +
	"them; the interval is the 2.5th to 97.5th percentile of guide / baseline over the iterations; a metric is better " +
	"or worse only when at least 97.5 % of the iterations put the guide on the same side of the baseline"

// Significance is a comparison's confidence intervals: per metric of evalrun.RepeatedMetrics the
// guide and baseline estimates (the mean of their repetitions' estimates), their ratio with its
// 95 % confidence interval, the same as a change in percent, and the verdict.
type Significance struct {
	Method              string                      `json:"method"`
	Confidence          float64                     `json:"confidence"`
	Iterations          int                         `json:"iterations"`
	Seed                uint64                      `json:"seed"`
	GuideRepetitions    int                         `json:"guide_repetitions"`
	BaselineRepetitions int                         `json:"baseline_repetitions"`
	Metrics             Ordered[MetricSignificance] `json:"metrics"`
}

// MetricSignificance is one metric's estimates, interval and verdict. The ratio and the change
// are null when the baseline estimate is 0 (the verdict still says which side is higher).
type MetricSignificance struct {
	Guide          *float64 `json:"guide"`
	Baseline       *float64 `json:"baseline"`
	Ratio          *float64 `json:"ratio"`
	RatioLow       *float64 `json:"ratio_ci_low"`
	RatioHigh      *float64 `json:"ratio_ci_high"`
	ChangePercent  *float64 `json:"change_percent"`
	ChangeLow      *float64 `json:"change_percent_ci_low"`
	ChangeHigh     *float64 `json:"change_percent_ci_high"`
	HigherIsBetter bool     `json:"higher_is_better"`
	Verdict        string   `json:"verdict"`
}

// higherIsBetter: throughputs are better higher; latencies and the error rate lower.
func higherIsBetter(metric string) bool {
	return !strings.HasSuffix(metric, "_ms") && metric != "error_rate"
}

// significance compares two cases' bootstrap records (nil when either has none). seedKey makes
// the iterations reproducible: the same two cases always give the same intervals.
func significance(g, b *evalrun.Bootstrap, seedKey string) *Significance {
	if g == nil || b == nil || len(g.Repetitions) == 0 || len(b.Repetitions) == 0 {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(seedKey))
	seed := h.Sum64()
	s := &Significance{Method: SignificanceMethod, Confidence: Confidence, Iterations: SignificanceIterations, Seed: seed,
		GuideRepetitions: len(g.Repetitions), BaselineRepetitions: len(b.Repetitions), Metrics: Ordered[MetricSignificance]{}}
	for i, metric := range evalrun.RepeatedMetrics {
		gs, bs := sideOf(g, metric), sideOf(b, metric)
		if gs == nil || bs == nil {
			continue
		}
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		ms := MetricSignificance{HigherIsBetter: higherIsBetter(metric), Verdict: VerdictNoSignificant}
		ge, be := gs.estimate(), bs.estimate()
		ms.Guide, ms.Baseline = ptr(round(ge, 4)), ptr(round(be, 4))
		ratios := make([]float64, 0, SignificanceIterations)
		higher, lower := 0, 0
		for range SignificanceIterations {
			gv, bv := gs.draw(rng), bs.draw(rng)
			switch {
			case gv > bv:
				higher++
			case gv < bv:
				lower++
			}
			if bv != 0 {
				ratios = append(ratios, gv/bv)
			}
		}
		if be != 0 && len(ratios) == SignificanceIterations {
			slices.Sort(ratios)
			lo, hi := evalrun.Percentile(ratios, 2.5), evalrun.Percentile(ratios, 97.5)
			ms.Ratio, ms.RatioLow, ms.RatioHigh = ptr(round(ge/be, 4)), ptr(round(lo, 4)), ptr(round(hi, 4))
			ms.ChangePercent, ms.ChangeLow, ms.ChangeHigh = ptr(round((ge/be-1)*100, 2)), ptr(round((lo-1)*100, 2)), ptr(round((hi-1)*100, 2))
		}
		need := int(math.Ceil((1 + Confidence) / 2 * SignificanceIterations))
		var guideHigher *bool
		switch {
		case higher >= need:
			guideHigher = ptr(true)
		case lower >= need:
			guideHigher = ptr(false)
		}
		if guideHigher != nil {
			ms.Verdict = VerdictWorse
			if *guideHigher == ms.HigherIsBetter {
				ms.Verdict = VerdictBetter
			}
		}
		s.Metrics = append(s.Metrics, Entry[MetricSignificance]{metric, ms})
	}
	return s
}

// side is one case's repetitions of one metric: each repetition's estimate and replicates.
type side struct {
	estimates  []float64
	replicates [][]float64
}

// sideOf is b's repetitions of metric that have replicates (nil when none has); a repetition
// without an estimate counts its replicates' mean.
func sideOf(b *evalrun.Bootstrap, metric string) *side {
	s := &side{}
	for _, r := range b.Repetitions {
		reps := r.Replicates[metric]
		if len(reps) == 0 {
			continue
		}
		est := 0.0
		if e := r.Estimate[metric]; e != nil {
			est = *e
		} else {
			for _, v := range reps {
				est += v
			}
			est /= float64(len(reps))
		}
		s.estimates, s.replicates = append(s.estimates, est), append(s.replicates, reps)
	}
	if len(s.replicates) == 0 {
		return nil
	}
	return s
}

// estimate is the mean of the repetitions' estimates.
func (s *side) estimate() float64 {
	total := 0.0
	for _, e := range s.estimates {
		total += e
	}
	return total / float64(len(s.estimates))
}

// draw is one bootstrap iteration of the side: its repetitions resampled with replacement, one
// random replicate of each, averaged.
func (s *side) draw(rng *rand.Rand) float64 {
	sum := 0.0
	for range s.replicates {
		reps := s.replicates[rng.IntN(len(s.replicates))]
		sum += reps[rng.IntN(len(reps))]
	}
	return sum / float64(len(s.replicates))
}
