package fidelity

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// Main is cmd/fidelity: score (default), -fit N (fit the coefficients with at most N scoring
// passes) and -lomo N (leave one model out, N passes per fit).
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fidelity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gt := fs.String("ground-truth", "", "ground-truth CSV (default: $GROUND_TRUTH, else "+DefaultGroundTruth+" beside the repository)")
	fit := fs.Int("fit", 0, "fit the coefficients with at most this many scoring passes, then score with them")
	lomo := fs.Int("lomo", 0, "leave one model out: fit on the others with at most this many passes, score the one left out")
	seeds := fs.String("seeds", "1,2,3", "Poisson seeds whose predictions are averaged")
	coefJSON := fs.String("coefficients", "", "coefficients as JSON (default: the fitted ones, stepcost.Fitted)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path := *gt
	if path == "" {
		wd, _ := os.Getwd()
		path = GroundTruthPath(wd)
	}
	exps, err := Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "fidelity: %v\n", err)
		return 1
	}
	opt := Options{}
	for _, s := range strings.Split(*seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "fidelity: -seeds: %q is not a seed\n", s)
			return 2
		}
		opt.Seeds = append(opt.Seeds, v)
	}
	coef := stepcost.Fitted
	if *coefJSON != "" {
		if err := json.Unmarshal([]byte(*coefJSON), &coef); err != nil {
			fmt.Fprintf(stderr, "fidelity: -coefficients: %v\n", err)
			return 2
		}
	}
	fmt.Fprintf(stdout, "ground truth: %s (%d experiments)\n", path, len(exps))
	if *fit > 0 {
		start := time.Now()
		res, err := Fit(exps, coef, opt, *fit, func(r FitResult) {
			b, _ := json.Marshal(r.Coefficients)
			fmt.Fprintf(stderr, "fit: pass %d loss %.3f %s\n", r.Evaluations, r.Loss, b)
		})
		if err != nil {
			fmt.Fprintf(stderr, "fidelity: %v\n", err)
			return 1
		}
		b, _ := json.Marshal(res.Coefficients)
		fmt.Fprintf(stdout, "fitted in %d passes (%.0f s): loss %.3f\ncoefficients: %s\n", res.Evaluations, time.Since(start).Seconds(), res.Loss, b)
		coef = res.Coefficients
	}
	if *lomo > 0 {
		folds, err := LeaveOneModelOut(exps, coef, opt, *lomo)
		if err != nil {
			fmt.Fprintf(stderr, "fidelity: %v\n", err)
			return 1
		}
		var all []Scored
		for _, f := range folds {
			b, _ := json.Marshal(f.Fit.Coefficients)
			fmt.Fprintf(stdout, "\nleft out: %s (fitted on the others: %s)\n", f.Model, b)
			WriteTable(stdout, f.Rows)
			WriteMAPE(stdout, "engine model, held out", Summarize(f.Rows), "")
			all = append(all, f.Rows...)
		}
		fmt.Fprintln(stdout, "\nleave one model out, all folds:")
		WriteMAPE(stdout, "engine model, held out", Summarize(all), "")
		fmt.Fprintln(stdout)
	}
	start := time.Now()
	rows, err := Score(exps, coef, opt)
	if err != nil {
		fmt.Fprintf(stderr, "fidelity: %v\n", err)
		return 1
	}
	WriteTable(stdout, rows)
	fmt.Fprintln(stdout)
	s := Summarize(rows)
	WriteMAPE(stdout, "Lensfn engine model", s, path)
	fmt.Fprintf(stdout, "scored in %.1f s of wall time (%d seeds)\n", time.Since(start).Seconds(), len(opt.Seeds))
	fmt.Fprintln(stdout, JSONLine(s))
	return 0
}
