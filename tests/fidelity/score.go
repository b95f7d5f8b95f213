package fidelity

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/lensfn/lensfn/runtime/predict"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// ClientTimeout is inference-perf's request timeout in these runs (seconds): the overloaded
// runs' slowest requests end just short of it.
const ClientTimeout = 300

// Scored is one stage row with its prediction.
type Scored struct {
	Row            Row
	Predicted      Metrics
	PredOverloaded bool
	Failed         float64 // share of requests the prediction failed
}

// Options of a scoring pass.
type Options struct {
	Seeds []uint64
	// SkipOverloaded leaves out the experiments with an overloaded stage (a fit does: their
	// numbers are not scored, and they are the slowest to predict).
	SkipOverloaded bool
}

// DefaultSeeds average three Poisson draws per experiment.
var DefaultSeeds = []uint64{1, 2, 3}

func hasOverload(x *Experiment) bool {
	for _, r := range x.Rows {
		if r.Overloaded {
			return true
		}
	}
	return false
}

// Score predicts every experiment with coef and pairs each stage row with its prediction (the
// mean over the seeds).
func Score(exps []Experiment, coef stepcost.Coefficients, opt Options) ([]Scored, error) {
	seeds := opt.Seeds
	if len(seeds) == 0 {
		seeds = DefaultSeeds
	}
	type job struct{ x, s int }
	var jobs []job
	for i := range exps {
		if opt.SkipOverloaded && hasOverload(&exps[i]) {
			continue
		}
		for s := range seeds {
			jobs = append(jobs, job{i, s})
		}
	}
	results := make([][][]Scored, len(exps))
	for i := range results {
		results[i] = make([][]Scored, len(seeds))
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				x := &exps[jobs[j].x]
				results[jobs[j].x][jobs[j].s], errs[j] = scoreExperiment(x, coef, seeds[jobs[j].s])
			}
		}()
	}
	for j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var out []Scored
	for i := range exps {
		if results[i][0] == nil {
			continue
		}
		for k := range exps[i].Rows {
			avg := results[i][0][k]
			vals := make([]float64, len(MetricNames))
			over, failed := 0, 0.0
			for s := range seeds {
				for m, v := range results[i][s][k].Predicted.Values() {
					vals[m] += v / float64(len(seeds))
				}
				if results[i][s][k].PredOverloaded {
					over++
				}
				failed += results[i][s][k].Failed / float64(len(seeds))
			}
			avg.Predicted = Metrics{vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]}
			avg.PredOverloaded = over*2 > len(seeds)
			avg.Failed = failed
			out = append(out, avg)
		}
	}
	return out, nil
}

func scoreExperiment(x *Experiment, coef stepcost.Coefficients, seed uint64) ([]Scored, error) {
	eng, err := x.Spec(coef)
	if err != nil {
		return nil, err
	}
	run, err := predict.SharedPrefix(x.Workload(), seed, eng, predict.Options{Timeout: ClientTimeout})
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %v", x.Name, err)
	}
	out := make([]Scored, len(x.Rows))
	for k, row := range x.Rows {
		s := run.Stage(k)
		out[k] = Scored{Row: row, PredOverloaded: predict.Overloaded(s),
			Predicted: Metrics{TTFTMean: s.TTFTMean, TTFTP90: s.TTFTP90, E2EMean: s.E2EMean, E2EP90: s.E2EP90, E2EP99: s.E2EP99,
				DecodeInterval: s.DecodeIntervalOfMeans}}
		if s.Requests > 0 {
			out[k].Failed = float64(s.Failed) / float64(s.Requests)
		}
	}
	return out, nil
}

// Summary is a scoring pass's headline: MAPE per metric over the rows that were not
// overloaded, and the overload verdicts.
type Summary struct {
	Rows            int
	MAPE            []float64 // MetricNames' order, percent
	OverloadCorrect int
	OverloadRows    int
	// FalseOverload counts rows that were not overloaded but predicted so.
	FalseOverload int
}

// APE is the absolute percentage error of p against m.
func APE(p, m float64) float64 {
	if m == 0 {
		return math.NaN()
	}
	return math.Abs(p-m) / math.Abs(m) * 100
}

// Summarize computes MAPE and the overload verdicts of scored rows.
func Summarize(rows []Scored) Summary {
	s := Summary{MAPE: make([]float64, len(MetricNames))}
	for _, r := range rows {
		if r.Row.Overloaded {
			s.OverloadRows++
			if r.PredOverloaded {
				s.OverloadCorrect++
			}
			continue
		}
		if r.PredOverloaded {
			s.FalseOverload++
		}
		s.Rows++
		pv, mv := r.Predicted.Values(), r.Row.Measured.Values()
		for m := range pv {
			s.MAPE[m] += APE(pv[m], mv[m])
		}
	}
	for m := range s.MAPE {
		if s.Rows > 0 {
			s.MAPE[m] /= float64(s.Rows)
		}
	}
	return s
}

// Loss is what a fit minimises: the mean of the six MAPEs, plus 100 points per row whose
// overload verdict is wrong.
func (s Summary) Loss() float64 {
	t := 0.0
	for _, v := range s.MAPE {
		t += v
	}
	return t/float64(len(s.MAPE)) + 100*float64(s.FalseOverload+s.OverloadRows-s.OverloadCorrect)
}
