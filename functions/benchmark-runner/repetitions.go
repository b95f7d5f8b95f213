package benchmarkrunner

import (
	"context"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// repetitionSeedStride separates the seeds of a run's repetitions: each repetition sends other
// prompts (a repeat of the same prompts would find them in the prefix cache and measure the
// cache, not the configuration).
const repetitionSeedStride = 0x9e3779b97f4a7c15

// workload runs the run's workload its repetitions times, back to back on the run's one clock,
// and keeps each repetition's metrics and bootstrap replicates (the owner does; a worker only
// sends, and the owner's merge replays its repetitions in the same order). Warm-up runs before
// the first repetition only.
func (x *execution) workload(ctx context.Context, fields map[string]any) error {
	reps := x.plan.repetitions()
	for r := range reps {
		x.mu.Lock()
		x.rep, x.repBuilder = r, x.samples.NewBuilder(x.plan.targets)
		x.mu.Unlock()
		x.seed = x.plan.repetitionSeed(r)
		switch {
		case reps <= 1 || x.merge != nil: // the merge replays what the workers logged
		case x.plan.worker != nil:
			x.r.runs.Logf(ctx, x.plan.id(), "Worker %d: repetition %d of %d", x.plan.worker.Index, r+1, reps)
		default:
			x.r.runs.Logf(ctx, x.plan.id(), "Repetition %d of %d", r+1, reps)
		}
		err := x.workloadOnce(ctx, fields)
		if x.plan.worker == nil && x.repBuilder.Count() > 0 {
			m := x.repBuilder.Metrics(x.plan.recordsURI())
			x.repMetrics = append(x.repMetrics, m)
			x.bootstrap = append(x.bootstrap, evalrun.BootstrapOf(r, x.repBuilder, m, x.plan.seed+uint64(r)))
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
func (x *execution) repetitionResults(fields map[string]any, metrics evalrun.Metrics) {
	if len(x.bootstrap) > 0 {
		fields["bootstrap"] = evalrun.Bootstrap{SchemaVersion: 1, Method: evalrun.BootstrapMethod,
			Replicates: evalrun.BootstrapReplicates, Seed: x.plan.seed, Repetitions: x.bootstrap}
	}
	if x.plan.repetitions() <= 1 {
		return
	}
	summaries := make([]map[string]any, len(x.repMetrics))
	for i, m := range x.repMetrics {
		summaries[i] = evalrun.RepetitionSummary(i, m)
	}
	fields["repetition_results"] = summaries
	metrics["repetitions"] = len(x.repMetrics)
	metrics["repetition_spread"] = evalrun.Spread(x.repMetrics)
}

// sinks are the builders that count rec: the stage's (sink) and the current repetition's. It is
// called with mu held.
func (x *execution) sinks(sink sinkFunc, rec loadgen.Record) []*evalrun.Builder {
	b := sink(rec)
	return append(b[:len(b):len(b)], x.repBuilder)
}

// builder is the builder of one stage or point, kept across repetitions so its metrics cover
// all of them (its benchmark time is the sum of its repetitions' spans).
func (x *execution) builder(key string) *evalrun.Builder {
	b, ok := x.stageBuilders[key]
	if !ok {
		b = x.samples.NewBuilder(x.plan.targets)
		x.stageBuilders[key] = b
	}
	return b
}

// planRequests adds a stage's requests to the planned count, for every repetition at once.
func (x *execution) planRequests(n int64) {
	if x.rep == 0 {
		x.progress.addPlanned(n * int64(x.plan.repetitions()))
	}
}
