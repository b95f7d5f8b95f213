package benchmarkrunner

import (
	"context"

	"github.com/lensfn/lensfn/runtime/evalrun"
)

// repetitionSeedStride separates the seeds of a run's repetitions: each repetition sends other
// prompts (a repeat of the same prompts would find them in the prefix cache and measure the
// cache, not the configuration).
const repetitionSeedStride = 0x9e3779b97f4a7c15

// workload runs the run's workload its repetitions times, back to back on the run's one clock,
// and keeps each repetition's metrics and bootstrap replicates (the owner does; a worker only
// sends, and the owner's merge replays its repetitions in the same order). Warm-up runs before
// the first repetition only.
func (x *execution) workload(ctx context.Context, out *outcome) error {
	reps := x.plan.repetitions()
	for r := range reps {
		x.tally.startRepetition(r)
		switch {
		case reps <= 1 || x.merge != nil: // the merge replays what the workers logged
		case x.plan.worker != nil:
			x.r.runs.Logf(ctx, x.plan.id(), "Worker %d: repetition %d of %d", x.plan.worker.Index, r+1, reps)
		default:
			x.r.runs.Logf(ctx, x.plan.id(), "Repetition %d of %d", r+1, reps)
		}
		err := x.workloadOnce(ctx, out)
		if x.plan.worker == nil {
			x.tally.endRepetition(r, x.plan.recordsURI(), x.plan.seed+uint64(r))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// repetitionResults stores what the repetitions give: every run keeps its bootstrap replicates
// (a comparison's confidence intervals come from them); a run of several repetitions also keeps
// each repetition's summary and, in its metrics, the spread of the headline metrics.
func (x *execution) repetitionResults(out *outcome, metrics evalrun.Metrics) {
	repMetrics, bootstrap := x.tally.repetitions()
	if len(bootstrap) > 0 {
		out.bootstrap = &evalrun.Bootstrap{SchemaVersion: 1, Method: evalrun.BootstrapMethod,
			Replicates: evalrun.BootstrapReplicates, Seed: x.plan.seed, Repetitions: bootstrap}
	}
	if x.plan.repetitions() <= 1 {
		return
	}
	summaries := make([]map[string]any, len(repMetrics))
	for i, m := range repMetrics {
		summaries[i] = evalrun.RepetitionSummary(i, m)
	}
	out.repetitionResults = summaries
	metrics["repetitions"] = len(repMetrics)
	metrics["repetition_spread"] = evalrun.Spread(repMetrics)
}

// seed is the seed of the repetition being sent.
func (x *execution) seed() uint64 { return x.plan.repetitionSeed(x.tally.repetition()) }

// planRequests adds a stage's requests to the planned count, for every repetition at once.
func (x *execution) planRequests(n int64) {
	if x.tally.repetition() == 0 {
		x.progress.addPlanned(n * int64(x.plan.repetitions()))
	}
}
