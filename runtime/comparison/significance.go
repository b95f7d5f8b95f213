package comparison

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/lensfn/lensfn/runtime/evalrun"
)

// Verdicts of a metric's change, guide against baseline.
const (
	VerdictBetter        = "better"
	VerdictWorse         = "worse"
	VerdictNoSignificant = "no significant difference"
)

// DefaultConfidence is the level of the intervals when the evaluation names none;
// MinConfidence and MaxConfidence bound the level an evaluation may ask for.
// SignificanceIterations is how many bootstrap iterations make an interval when a side has a
// single repetition.
const (
	DefaultConfidence      = 0.95
	MinConfidence          = 0.8
	MaxConfidence          = 0.999
	SignificanceIterations = 2000
)

// The methods of a metric's interval.
const (
	// MethodWelch is used when both sides have two or more repetitions of the metric: the
	// repetitions' own spread is then the noise of a whole run, host drift and all.
	MethodWelch = "welch-t"
	// MethodBootstrap is used when a side has one repetition: its requests are all the noise
	// there is.
	MethodBootstrap = "bootstrap"
)

// SignificanceMethod says how the intervals are made.
const SignificanceMethod = "per metric: with two or more repetitions on each side, Welch's t over the repetitions' " +
	"estimates on the log scale (each side's mean, its relative standard error the repetitions' standard deviation over " +
	"sqrt(n) and the mean, Welch-Satterthwaite degrees of freedom; the ratio's interval is exp(log ratio +- t * se), and " +
	"when a mean is 0 the difference of the means is tested instead); with one repetition on a side, a hierarchical " +
	"bootstrap over repetitions and requests (each iteration resamples each side's repetitions, takes one request-level " +
	"replicate of each and averages them; the interval is the percentiles of guide / baseline over the iterations). A metric " +
	"is better or worse when its interval excludes no change; each metric is tested at the confidence level on its own"

// Significance is a comparison's confidence intervals: per metric of evalrun.RepeatedMetrics the
// guide and baseline estimates (the mean of their repetitions' estimates), their ratio with its
// confidence interval, the same as a change in percent, and the verdict.
type Significance struct {
	Method              string                      `json:"method"`
	Confidence          float64                     `json:"confidence"`
	Iterations          int                         `json:"iterations" doc:"bootstrap iterations of the metrics whose method is bootstrap"`
	Seed                uint64                      `json:"seed" doc:"the seed of those iterations"`
	GuideRepetitions    int                         `json:"guide_repetitions"`
	BaselineRepetitions int                         `json:"baseline_repetitions"`
	Metrics             Ordered[MetricSignificance] `json:"metrics"`
}

// MetricSignificance is one metric's estimates, interval and verdict. The ratio and the change
// are null when the baseline estimate is 0 (the verdict still says which side is higher).
type MetricSignificance struct {
	Method           string   `json:"method" doc:"welch-t or bootstrap"`
	DegreesOfFreedom *float64 `json:"degrees_of_freedom,omitempty" doc:"Welch-Satterthwaite degrees of freedom (welch-t only)"`
	Guide            *float64 `json:"guide"`
	Baseline         *float64 `json:"baseline"`
	Ratio            *float64 `json:"ratio"`
	RatioLow         *float64 `json:"ratio_ci_low"`
	RatioHigh        *float64 `json:"ratio_ci_high"`
	ChangePercent    *float64 `json:"change_percent"`
	ChangeLow        *float64 `json:"change_percent_ci_low"`
	ChangeHigh       *float64 `json:"change_percent_ci_high"`
	HigherIsBetter   bool     `json:"higher_is_better"`
	Verdict          string   `json:"verdict"`
}

// higherIsBetter: throughputs are better higher; latencies and the error rate lower.
func higherIsBetter(metric string) bool {
	return !strings.HasSuffix(metric, "_ms") && metric != "error_rate"
}

// significance compares two cases' bootstrap records at the given confidence level (nil when
// either has none). seedKey makes the bootstrap iterations reproducible: the same two cases
// always give the same intervals.
func significance(g, b *evalrun.Bootstrap, seedKey string, confidence float64) *Significance {
	if g == nil || b == nil || len(g.Repetitions) == 0 || len(b.Repetitions) == 0 {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(seedKey))
	seed := h.Sum64()
	s := &Significance{Method: SignificanceMethod, Confidence: confidence, Iterations: SignificanceIterations, Seed: seed,
		GuideRepetitions: len(g.Repetitions), BaselineRepetitions: len(b.Repetitions), Metrics: Ordered[MetricSignificance]{}}
	for i, metric := range evalrun.RepeatedMetrics {
		gs, bs := sideOf(g, metric), sideOf(b, metric)
		if gs == nil || bs == nil {
			continue
		}
		ms := MetricSignificance{HigherIsBetter: higherIsBetter(metric), Verdict: VerdictNoSignificant}
		ge, be := gs.estimate(), bs.estimate()
		ms.Guide, ms.Baseline = ptr(round(ge, 4)), ptr(round(be, 4))
		var guideHigher *bool
		if len(gs.estimates) >= 2 && len(bs.estimates) >= 2 && spread(gs.estimates, bs.estimates) {
			guideHigher = welch(&ms, gs.estimates, bs.estimates, confidence)
		} else {
			guideHigher = bootstrapInterval(&ms, gs, bs, rand.New(rand.NewPCG(seed, uint64(i))), confidence)
		}
		if be != 0 && ms.RatioLow != nil {
			ms.Ratio = ptr(round(ge/be, 4))
			ms.ChangePercent = ptr(round((ge/be-1)*100, 2))
			ms.ChangeLow, ms.ChangeHigh = ptr(round((*ms.RatioLow-1)*100, 2)), ptr(round((*ms.RatioHigh-1)*100, 2))
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

// welch sets ms's interval from the two sides' repetition estimates (two or more each) and
// returns whether the guide is significantly higher (nil: no significant difference). Both
// means positive: the log of the ratio of the means, whose standard error is by the delta method
// each side's relative standard error of the mean, so the interval is the ratio's. Otherwise
// (an error rate of 0): the difference of the means, the ratio's interval that difference over
// the baseline's mean (none when it is 0).
func welch(ms *MetricSignificance, g, b []float64, confidence float64) *bool {
	mg, vg := meanVariance(g)
	mb, vb := meanVariance(b)
	ng, nb := float64(len(g)), float64(len(b))
	logScale := mg > 0 && mb > 0
	centre := mg - mb
	eg, eb := vg/ng, vb/nb // squared standard errors of the means
	if logScale {
		centre = math.Log(mg / mb)
		eg, eb = eg/(mg*mg), eb/(mb*mb)
	}
	se := math.Sqrt(eg + eb) // > 0: spread held
	ms.Method = MethodWelch
	df := (eg + eb) * (eg + eb) / (eg*eg/(ng-1) + eb*eb/(nb-1))
	ms.DegreesOfFreedom = ptr(round(df, 2))
	quantile := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile((1 + confidence) / 2)
	low, high := centre-quantile*se, centre+quantile*se
	switch {
	case logScale:
		ms.RatioLow, ms.RatioHigh = ptr(round(math.Exp(low), 4)), ptr(round(math.Exp(high), 4))
	case mb != 0:
		ms.RatioLow, ms.RatioHigh = ptr(round(1+low/mb, 4)), ptr(round(1+high/mb, 4))
	}
	switch {
	case low > 0:
		return ptr(true)
	case high < 0:
		return ptr(false)
	}
	return nil
}

// spread says whether the repetitions vary at all: when every repetition of both sides has the
// same estimate (an error rate of 0 throughout, or a failure or two in as many requests), they
// say nothing of the noise, so the requests, not a zero standard error, must judge.
func spread(g, b []float64) bool {
	_, vg := meanVariance(g)
	_, vb := meanVariance(b)
	return vg > 0 || vb > 0
}

// meanVariance is xs's mean and sample variance (n - 1 in the denominator).
func meanVariance(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// bootstrapInterval sets ms's interval by the hierarchical bootstrap and returns whether the
// guide is significantly higher: at least (1 + confidence) / 2 of the iterations put it on the
// same side of the baseline, which is the interval of the ratio excluding 1 when the baseline is
// not 0, and still works when it is.
func bootstrapInterval(ms *MetricSignificance, gs, bs *side, rng *rand.Rand, confidence float64) *bool {
	ms.Method = MethodBootstrap
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
	if len(ratios) == SignificanceIterations {
		slices.Sort(ratios)
		tail := (1 - confidence) / 2 * 100
		lo, hi := evalrun.Percentile(ratios, tail), evalrun.Percentile(ratios, 100-tail)
		ms.RatioLow, ms.RatioHigh = ptr(round(lo, 4)), ptr(round(hi, 4))
	}
	need := int(math.Ceil((1 + confidence) / 2 * SignificanceIterations))
	switch {
	case higher >= need:
		return ptr(true)
	case lower >= need:
		return ptr(false)
	}
	return nil
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
