package fidelity

import (
	"cmp"
	"math"
	"slices"

	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// param is one fitted coefficient: how to read and set it, and its physical range.
type param struct {
	name   string
	get    func(*stepcost.Coefficients) *float64
	lo, hi float64
}

var params = []param{
	{"compute_efficiency", func(c *stepcost.Coefficients) *float64 { return &c.ComputeEfficiency }, 0.2, 1},
	{"memory_efficiency", func(c *stepcost.Coefficients) *float64 { return &c.MemoryEfficiency }, 0.4, 1},
	{"step_overhead_us", func(c *stepcost.Coefficients) *float64 { return &c.StepOverheadUs }, 0, 5000},
	{"layer_overhead_us", func(c *stepcost.Coefficients) *float64 { return &c.LayerOverheadUs }, 0, 100},
	{"seq_overhead_us", func(c *stepcost.Coefficients) *float64 { return &c.SeqOverheadUs }, 0, 200},
	{"allreduce_us", func(c *stepcost.Coefficients) *float64 { return &c.AllReduceUs }, 0, 100},
	{"request_overhead_us", func(c *stepcost.Coefficients) *float64 { return &c.RequestOverheadUs }, 0, 50000},
}

// toVector maps coefficients to [0, 1] per parameter (a simplex on a unit cube).
func toVector(c stepcost.Coefficients) []float64 {
	v := make([]float64, len(params))
	for i, p := range params {
		v[i] = (*p.get(&c) - p.lo) / (p.hi - p.lo)
	}
	return v
}

func fromVector(v []float64) stepcost.Coefficients {
	var c stepcost.Coefficients
	for i, p := range params {
		x := min(max(v[i], 0), 1)
		*p.get(&c) = p.lo + x*(p.hi-p.lo)
	}
	c.ComputeEfficiency = max(c.ComputeEfficiency, 0.01)
	c.MemoryEfficiency = max(c.MemoryEfficiency, 0.01)
	return c
}

// FitResult is a fit's coefficients and loss.
type FitResult struct {
	Coefficients stepcost.Coefficients
	Loss         float64
	Evaluations  int
}

// Fit minimises Loss over the experiments that have no overloaded stage, starting from
// start, with Nelder-Mead on the coefficients' physical ranges, for at most maxEval scoring
// passes.
func Fit(exps []Experiment, start stepcost.Coefficients, opt Options, maxEval int, progress func(FitResult)) (FitResult, error) {
	opt.SkipOverloaded = true
	var evalErr error
	evals := 0
	f := func(v []float64) float64 {
		evals++
		rows, err := Score(exps, fromVector(v), opt)
		if err != nil {
			evalErr = err
			return math.Inf(1)
		}
		l := Summarize(rows).Loss()
		// Leaving the unit cube costs: the coefficient would be clamped.
		for _, x := range v {
			if x < 0 {
				l += 1000 * -x
			} else if x > 1 {
				l += 1000 * (x - 1)
			}
		}
		return l
	}
	best, loss := nelderMead(f, toVector(start), 0.15, maxEval, func(v []float64, l float64) {
		if progress != nil {
			progress(FitResult{Coefficients: fromVector(v), Loss: l, Evaluations: evals})
		}
	})
	if evalErr != nil {
		return FitResult{}, evalErr
	}
	return FitResult{Coefficients: fromVector(best), Loss: loss, Evaluations: evals}, nil
}

// nelderMead minimises f from x0 (initial simplex steps of size step), calling report after
// each improvement of the best point.
func nelderMead(f func([]float64) float64, x0 []float64, step float64, maxEval int, report func([]float64, float64)) ([]float64, float64) {
	n := len(x0)
	pts := make([][]float64, n+1)
	vals := make([]float64, n+1)
	pts[0] = slices.Clone(x0)
	vals[0] = f(pts[0])
	for i := 0; i < n; i++ {
		p := slices.Clone(x0)
		if p[i]+step <= 1 {
			p[i] += step
		} else {
			p[i] -= step
		}
		pts[i+1], vals[i+1] = p, f(p)
	}
	evals := n + 1
	bestSeen := math.Inf(1)
	order := make([]int, n+1)
	for evals < maxEval {
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(vals[a], vals[b]) })
		sp, sv := make([][]float64, n+1), make([]float64, n+1)
		for i, o := range order {
			sp[i], sv[i] = pts[o], vals[o]
		}
		pts, vals = sp, sv
		if vals[0] < bestSeen {
			bestSeen = vals[0]
			report(pts[0], vals[0])
		}
		if vals[n]-vals[0] < 1e-4 {
			break
		}
		c := make([]float64, n)
		for i := 0; i < n; i++ {
			for j := range c {
				c[j] += pts[i][j] / float64(n)
			}
		}
		at := func(t float64) []float64 {
			p := make([]float64, n)
			for j := range p {
				p[j] = c[j] + t*(pts[n][j]-c[j])
			}
			return p
		}
		r := at(-1)
		rv := f(r)
		evals++
		switch {
		case rv < vals[0]:
			e := at(-2)
			ev := f(e)
			evals++
			if ev < rv {
				pts[n], vals[n] = e, ev
			} else {
				pts[n], vals[n] = r, rv
			}
		case rv < vals[n-1]:
			pts[n], vals[n] = r, rv
		default:
			t := 0.5
			if rv < vals[n] {
				t = -0.5
			}
			k := at(t)
			kv := f(k)
			evals++
			if kv < math.Min(rv, vals[n]) {
				pts[n], vals[n] = k, kv
				break
			}
			for i := 1; i <= n; i++ {
				for j := range pts[i] {
					pts[i][j] = pts[0][j] + 0.5*(pts[i][j]-pts[0][j])
				}
				vals[i] = f(pts[i])
				evals++
			}
		}
	}
	i := 0
	for k := range vals {
		if vals[k] < vals[i] {
			i = k
		}
	}
	return pts[i], vals[i]
}

// Fold is one model left out: the coefficients fitted on the others and the left-out
// model's rows scored with them.
type Fold struct {
	Model string
	Fit   FitResult
	Rows  []Scored
}

// LeaveOneModelOut fits on every model but one and scores that one, for each model.
func LeaveOneModelOut(exps []Experiment, start stepcost.Coefficients, opt Options, maxEval int) ([]Fold, error) {
	var models []string
	for i := range exps {
		if !slices.Contains(models, exps[i].Model()) {
			models = append(models, exps[i].Model())
		}
	}
	var folds []Fold
	for _, m := range models {
		var train, test []Experiment
		for _, x := range exps {
			if x.Model() == m {
				test = append(test, x)
			} else {
				train = append(train, x)
			}
		}
		fit, err := Fit(train, start, opt, maxEval, nil)
		if err != nil {
			return nil, err
		}
		rows, err := Score(test, fit.Coefficients, opt)
		if err != nil {
			return nil, err
		}
		folds = append(folds, Fold{Model: m, Fit: fit, Rows: rows})
	}
	return folds, nil
}
