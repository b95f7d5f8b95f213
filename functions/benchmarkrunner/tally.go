package benchmarkrunner

import (
	"sync"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// tally turns the measured requests into the run's numbers. samples holds each request's
// numbers once; the builders over it count them for the run (total), for each matrix point,
// concurrency stage and rate stage (kept across repetitions, so their metrics cover all of
// them), and for the repetition being sent; each finished repetition leaves its metrics and
// bootstrap replicates.
//
// Locks: mu guards samples, every builder, the builders' map, rep, repBuilder, repMetrics and
// bootstrap (the senders add records while the execution's goroutine reads metrics between
// stages). It is never held while another part's lock is taken. total and totalSinks are set
// by newTally and never change.
type tally struct {
	targets *events.SLATargets
	total   *evalrun.Builder // the run's metrics
	// totalSinks is totalOnly's answer, built once (a sink runs for every record).
	totalSinks []*evalrun.Builder

	mu            sync.Mutex
	samples       *evalrun.Samples
	stageBuilders map[string]*evalrun.Builder // by "point/<i>", "stage/<i>/<j>", "rate/<k>"
	rep           int                         // the repetition being sent
	repBuilder    *evalrun.Builder            // its measured requests
	repMetrics    []evalrun.Metrics           // the finished repetitions' metrics
	bootstrap     []evalrun.BootstrapRepetition
}

func newTally(targets *events.SLATargets) *tally {
	t := &tally{targets: targets, samples: evalrun.NewSamples(), stageBuilders: map[string]*evalrun.Builder{}}
	t.total = t.samples.NewBuilder(targets)
	t.totalSinks = []*evalrun.Builder{t.total}
	return t
}

// sinkFunc names the builders that count a measured record (the run's total among them); the
// tally stores its numbers once in samples for all of them.
type sinkFunc func(rec loadgen.Record) []*evalrun.Builder

// totalOnly is the sink of a stage counted in the run's metrics only.
func (t *tally) totalOnly(loadgen.Record) []*evalrun.Builder { return t.totalSinks }

// startRepetition begins counting repetition r.
func (t *tally) startRepetition(r int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rep, t.repBuilder = r, t.samples.NewBuilder(t.targets)
}

// repetition is the repetition being sent.
func (t *tally) repetition() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rep
}

// add counts a measured record (its inter-token gaps taken out) in the builders sink names and
// in the current repetition's. sink runs with mu held: it only picks builders (totalOnly, or
// ones it got from builder before the stage), and calls no other method of the tally.
func (t *tally) add(rec loadgen.Record, gaps []float64, sink sinkFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := sink(rec)
	t.samples.Add(rec, gaps, append(b[:len(b):len(b)], t.repBuilder)...)
}

// builder is the builder of one stage or point, kept across repetitions so its metrics cover
// all of them (its benchmark time is the sum of its repetitions' spans).
func (t *tally) builder(key string) *evalrun.Builder {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.stageBuilders[key]
	if !ok {
		b = t.samples.NewBuilder(t.targets)
		t.stageBuilders[key] = b
	}
	return b
}

// metrics are b's metrics so far; recordsURI is the records' artifact they name.
func (t *tally) metrics(b *evalrun.Builder, recordsURI string) evalrun.Metrics {
	t.mu.Lock()
	defer t.mu.Unlock()
	return b.Metrics(recordsURI)
}

// count is how many measured requests the run counted.
func (t *tally) count() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total.Count()
}

// endRepetition keeps repetition r's metrics and bootstrap replicates (seed is the
// replicates' seed) when it counted any request.
func (t *tally) endRepetition(r int, recordsURI string, seed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.repBuilder.Count() == 0 {
		return
	}
	m := t.repBuilder.Metrics(recordsURI)
	t.repMetrics = append(t.repMetrics, m)
	t.bootstrap = append(t.bootstrap, evalrun.BootstrapOf(r, t.repBuilder, m, seed))
}

// repetitions are the finished repetitions' metrics and bootstrap replicates.
func (t *tally) repetitions() ([]evalrun.Metrics, []evalrun.BootstrapRepetition) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.repMetrics, t.bootstrap
}
