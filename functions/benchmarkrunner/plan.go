package benchmarkrunner

import (
	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// runPlan is what one execution will do, fixed when the execution is built: the run's spec
// (its stages and workload) and SLA targets, where the requests go (the run's endpoint, model
// and API key) and how they are shaped (API, streaming, ignore_eos), the per-invocation budget,
// the run's seed, and the execution's role: the owner of a run, or one worker of it, and how
// many copies of the workload it sends itself. Nothing writes a plan after newPlan, so it has no
// lock and any goroutine may read it.
type runPlan struct {
	run     *evalrun.Run // the claimed run as loaded: its ID, endpoint, model, deployment execution
	spec    events.BenchmarkSpec
	targets *events.SLATargets
	key     string // the run's API key ("" for none)
	timeout int    // the resolved wait_timeout_seconds, the bound of each invocation
	// seed is the run's seed: repetition r sends with seed + r x repetitionSeedStride.
	seed uint64
	// senders is how many copies of the workload this execution sends itself: the run's
	// parallelism, or 1 for a worker (the owner of a run with parallelism > 1 sends none: its
	// workers do, and the merge replays their records).
	senders int
	worker  *evalrun.Worker // set when this execution is one worker of a run
	// api, stream and ignoreEOS shape the requests: streamed completions with ignore_eos
	// unless an inline workload_yaml says otherwise.
	api               loadgen.API
	stream, ignoreEOS bool
	// yaml is the inline workload_yaml, parsed; yamlErr says why it no longer parses (the run
	// fails with it when its workload would start).
	yaml    *evalrun.InferencePerfConfig
	yamlErr error
}

// newPlan is the plan of a claimed run with its API key, sent by the owner (worker nil) or by
// one of its workers.
func newPlan(run *evalrun.Run, spec events.BenchmarkSpec, key string, worker *evalrun.Worker) *runPlan {
	p := &runPlan{run: run, spec: spec, targets: run.SLATargets, key: key, timeout: run.TimeoutSeconds(),
		seed: loadgen.SeedOf(run.ID), senders: *spec.Parallelism, worker: worker,
		api: loadgen.APICompletions, stream: true, ignoreEOS: true}
	if worker != nil {
		p.senders = 1
	}
	if spec.WorkloadYAML != nil && len(spec.Matrix) == 0 && spec.SharedPrefix == nil {
		if p.yaml, p.yamlErr = evalrun.ParseWorkloadYAML(*spec.WorkloadYAML); p.yamlErr == nil {
			w, _ := p.yaml.Workload()
			p.stream, p.ignoreEOS = w.Stream, w.IgnoreEOS
			if w.API == "chat" {
				p.api = loadgen.APIChat
			}
		}
	}
	return p
}

// id is the run's ID.
func (p *runPlan) id() string { return p.run.ID }

// recordsURI is the per-request records' artifact, the source goodput names.
func (p *runPlan) recordsURI() string { return artifactsURI(p.id()) + "per-request-jsonl" }

// repetitions is how many times the workload is sent, back to back.
func (p *runPlan) repetitions() int { return *p.spec.Repetitions }

// parallel says whether the run is sent by several workers at once.
func (p *runPlan) parallel() bool { return *p.spec.Parallelism > 1 }

// distributed says whether this execution fans the run out to workers instead of sending it.
func (p *runPlan) distributed() bool { return p.senders > 1 && p.worker == nil }

// repetitionSeed is the seed repetition r sends with.
func (p *runPlan) repetitionSeed(r int) uint64 { return p.seed + uint64(r)*repetitionSeedStride }
