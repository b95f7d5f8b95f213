package benchmarkrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/rawjson"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workload"
)

// RecordsFile is the per-request artifact a run writes in its folder.
const RecordsFile = evalrun.RecordsFile

var (
	errCancelled = errors.New("cancelled by request")
	errShutdown  = errors.New("the runner is shutting down")
)

// timeoutError is the cause of an invocation that hit the resolved wait_timeout_seconds.
type timeoutError struct {
	phase   string
	seconds int
}

func (e timeoutError) Error() string {
	return fmt.Sprintf("the wait timeout of %d s was reached in phase %s", e.seconds, e.phase)
}

// result is how a run ended and what to store with it.
type result struct {
	status string
	err    string
	out    outcome
}

// outcome is what a benchmark stores on its run when it ends, filled in as the workload goes
// (the last repetition's results win); a block left unset is not written.
type outcome struct {
	monitoring        map[string]any
	warmup            map[string]any
	matrixResults     *[]map[string]any // a matrix's points (null when it sent none)
	rateStageResults  []map[string]any
	capacityAnalysis  map[string]any
	repetitionResults []map[string]any
	bootstrap         *evalrun.Bootstrap
	metrics           evalrun.Metrics
	sla               *events.SLAVerdict
	artifacts         []map[string]string
	resourceSnapshot  map[string]any
	diagnostics       map[string]any
	// ended says the result was assembled (after the workload, or after a failed preparation),
	// so its metrics, artifacts, resource snapshot and diagnostics are written; a run that failed
	// before it could start (its folder, its records file, its key) writes none.
	ended bool
}

// result is the outcome as the run's stored blocks.
func (o *outcome) result() evalrun.Result {
	var res evalrun.Result
	if o.monitoring != nil {
		res.Monitoring = evalrun.JSON(o.monitoring)
	}
	if o.warmup != nil {
		res.Warmup = evalrun.JSON(o.warmup)
	}
	if o.matrixResults != nil {
		res.MatrixResults = evalrun.JSON(*o.matrixResults)
	}
	if o.rateStageResults != nil {
		res.RateStageResults = evalrun.JSON(o.rateStageResults)
		res.CapacityAnalysis = evalrun.JSON(o.capacityAnalysis)
	}
	if o.repetitionResults != nil {
		res.RepetitionResults = evalrun.JSON(o.repetitionResults)
	}
	res.Bootstrap, res.SLA = o.bootstrap, o.sla
	if o.ended {
		res.Metrics, res.Artifacts = evalrun.JSON(o.metrics), evalrun.JSON(o.artifacts)
		res.ResourceSnapshot, res.Diagnostics = evalrun.JSON(o.resourceSnapshot), evalrun.JSON(o.diagnostics)
	}
	return res
}

func (res *result) apply(run *evalrun.Run) {
	run.Finish(res.out.result())
	run.FinishedAt = evalrun.Ptr(evalrun.Now())
	if res.err != "" {
		run.Error = rawjson.Some(res.err)
	} else {
		run.Error = rawjson.Null[string]()
	}
	run.ProgressMessage = evalrun.Ptr("Benchmark " + res.status)
	if res.status == evalrun.StatusSucceeded {
		run.ProgressPercent = evalrun.Ptr(100.0)
	}
	run.LiveMetrics = nil
}

// execution is one claimed run on its way through its phases: it prepares the run, sends its
// workload stage by stage (or has its workers send it) and assembles the result. Its parts, each
// with its own file and lock: plan (what it sends, read-only), progress (what it shows while it
// runs), evidence (the serving evidence and diagnostics around the traffic), tally (the
// measured requests' numbers) and, while the owner of a run with workers replays their records,
// merge. It takes no lock of its own, and it never holds one part's lock while calling another
// part. Its own fields are the execution's goroutine's: the stages' senders read records,
// origin and seq, which are set before the senders start.
type execution struct {
	r    *Runner
	plan *runPlan // what it sends, fixed once built (plan.go)

	progress *progressReporter // the phase, counts, live summary and heartbeat it stores (progress.go)
	evidence *evidenceMonitor  // the serving evidence and diagnostics (evidence.go, diagnostics.go)
	tally    *tally            // the measured requests' numbers (tally.go)
	merge    *ownerMerge       // set while the owner replays its workers' records (merge.go)
	records  *loadgen.JSONLWriter

	// started is the execution's start, the zero of the monitor's clock; rateStart is when the
	// rate stages began on it (seconds).
	started   time.Time
	rateStart float64
	// origin is the zero of every stage's record times: stages run back to back on this one
	// clock, so a run's window (and its throughput, goodput and timelines) spans them all
	// rather than overlaying stages that each restarted at 0.
	origin time.Time
	// seq numbers the stages in the order every worker sends them, so the owner's merge finds
	// each stage's records in every worker's file.
	seq int
}

// newExecution prepares the execution of a claimed run, by its owner (worker nil) or by one
// worker of it.
func (r *Runner) newExecution(run *evalrun.Run, c *state.HeldLease, worker *evalrun.Worker) (*execution, error) {
	spec, err := run.Spec()
	if err != nil {
		return nil, err
	}
	key, err := r.runs.APIKey(run)
	if err != nil {
		return nil, fmt.Errorf("the run's API key cannot be opened: %v", err)
	}
	p, started := newPlan(run, spec, key, worker), time.Now()
	return &execution{r: r, plan: p, started: started, progress: newProgress(r.runs, p, c, started),
		evidence: newEvidenceMonitor(r, p, started), tally: newTally(p.targets)}, nil
}

// benchmark runs the claimed run to its end and says how it ended.
func (r *Runner) benchmark(ctx context.Context, run *evalrun.Run, c *state.HeldLease) *result {
	fail := func(format string, args ...any) *result {
		return &result{status: evalrun.StatusFailed, err: fmt.Sprintf(format, args...)}
	}
	x, err := r.newExecution(run, c, nil)
	if err != nil {
		return fail("%v", err)
	}
	dir := r.runs.RunDir(run.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("cannot create the run's folder: %v", err)
	}
	f, err := os.Create(r.runs.RecordsPath(run.ID))
	if err != nil {
		return fail("cannot create the per-request artifact: %v", err)
	}
	x.records = loadgen.NewJSONLWriter(f)
	defer x.records.Close()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		x.progress.watch(ctx, cancel, r.settings.PollInterval, r.settings.ReportInterval)
	}()
	defer func() { cancel(nil); <-watched }()

	var out outcome
	werr := x.prepare(ctx, &out)
	var evidence map[string]any
	if werr == nil {
		stopScrape := x.evidence.scrape(ctx)
		x.origin = time.Now()
		benchStart := x.origin.Sub(x.started).Seconds()
		werr = x.runWorkload(ctx, &out)
		end := time.Since(x.started).Seconds()
		stopScrape()
		evidence = x.evidence.window(ctx, benchStart, end)
		x.evidence.stageEvidence(out.rateStageResults, x.rateStart)
	}
	if ferr := x.records.Flush(); ferr != nil && werr == nil {
		werr = ferr
	}
	metrics := x.tally.metrics(x.tally.total, x.plan.recordsURI())
	if ca := out.capacityAnalysis; ca != nil {
		for _, k := range []string{"maximum_stable_qps", "slo_goodput_rps", "slo_violation_point", "saturation_point"} {
			if ca[k] != nil {
				metrics[k] = ca[k]
			}
		}
	}
	for k, v := range evidence {
		metrics[k] = v
	}
	if mon := out.monitoring; mon != nil && evidence != nil {
		obs := evidence["observability"].(map[string]any)
		if obs["status"] == "available" && obs["flow_status"] != "available" {
			mon["status"] = "partial" // resources sampled, but no traffic samples
		} else {
			mon["status"] = obs["status"]
		}
	}
	x.repetitionResults(&out, metrics)
	out.metrics, out.ended = metrics, true
	if sla := evalrun.EvaluateSLA(metrics, x.plan.targets); sla != nil {
		if repMetrics, _ := x.tally.repetitions(); len(repMetrics) > 1 {
			evalrun.CountRepetitionsMet(sla, repMetrics, x.plan.targets)
		}
		out.sla = sla
	}
	// The CSV and the HTML report are rendered from the records and the stored run when they
	// are downloaded.
	uri := artifactsURI(run.ID)
	out.artifacts = []map[string]string{
		{"kind": "per-request-jsonl", "media_type": "application/x-ndjson", "uri": uri + "per-request-jsonl"},
		{"kind": "per-request-csv", "media_type": "text/csv; charset=utf-8", "uri": uri + "per-request-csv"},
		{"kind": "report-html", "media_type": "text/html; charset=utf-8", "uri": uri + "report-html"},
	}
	out.resourceSnapshot = x.evidence.resourceSnapshot(ctx)
	out.diagnostics = x.evidence.diagnostics(ctx)
	res := &result{status: evalrun.StatusSucceeded, out: out}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errCancelled):
		res.status = evalrun.StatusCancelled
	case errors.Is(werr, errCancelled):
		res.status = evalrun.StatusCancelled
	case werr != nil:
		res.status, res.err = evalrun.StatusFailed, werr.Error()
	case x.tally.count() > 0 && metrics["success_count"] == int64(0):
		res.status, res.err = evalrun.StatusFailed, "every measured request failed; see the per-request artifact for their errors"
	}
	return res
}

// artifactsURI is where the API serves a run's artifacts. Answers name artifacts by it, never by
// their file on the runner's disk (a server path says nothing useful to a client and tells an
// attacker the layout).
func artifactsURI(runID string) string { return "/api/v1/evaluate/runs/" + runID + "/artifacts/" }

// setPhase records the phase the run enters (the merge's replayed phases are only remembered:
// the workers' were stored as they ran).
func (x *execution) setPhase(ctx context.Context, phase string) {
	if x.merge != nil {
		x.progress.notePhase(phase)
		return
	}
	x.progress.setPhase(ctx, phase, x.origin)
}

// prepare checks the endpoint serves the model before any traffic, within the resolved budget.
func (x *execution) prepare(ctx context.Context, out *outcome) error {
	x.setPhase(ctx, evalrun.PhasePreparingMonitoring)
	budget := time.Duration(x.plan.timeout) * time.Second
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	url := strings.TrimRight(x.plan.run.Internal.Endpoint, "/")
	if !strings.HasSuffix(url, "/v1") {
		url += "/v1"
	}
	url += "/models"
	if err := x.r.deps.Egress.Check(ctx, url); errors.Is(err, egress.ErrNotAllowed) {
		return errors.New("the endpoint is outside this installation's endpoint policy (LENS_ENDPOINT_ALLOW / LENS_ENDPOINT_DENY)")
	}
	var last string
	for attempt := 1; ; attempt++ {
		last = x.probe(ctx, url)
		if last == "" {
			break
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), errCancelled) {
				return errCancelled
			}
			return fmt.Errorf("the endpoint was not ready within the %d s budget: %s", x.plan.timeout, last)
		case <-time.After(time.Second):
		}
	}
	monitoring, err := x.evidence.prepare(ctx)
	if err != nil {
		return err
	}
	out.monitoring = monitoring
	return nil
}

// probe asks the endpoint's model list; "" when it answered and serves the run's model.
func (x *execution) probe(ctx context.Context, url string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	if x.plan.key != "" {
		req.Header.Set("Authorization", "Bearer "+x.plan.key)
	}
	resp, err := x.r.client.Do(req)
	if err != nil {
		return "the model list could not be read: " + egress.Reason(err).Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("the model list answered HTTP %d", resp.StatusCode)
	}
	if !strings.Contains(string(body), `"`+x.plan.run.Internal.Model+`"`) {
		return fmt.Sprintf("the endpoint does not serve model %q", x.plan.run.Internal.Model)
	}
	return ""
}

// invocation runs one phase under the resolved per-invocation limit.
func (x *execution) invocation(ctx context.Context, phase string, body func(ctx context.Context) error) error {
	x.setPhase(ctx, phase)
	ictx, cancel := context.WithTimeoutCause(ctx, time.Duration(x.plan.timeout)*time.Second, timeoutError{phase, x.plan.timeout})
	defer cancel()
	err := body(ictx)
	if cause := context.Cause(ictx); cause != nil {
		var te timeoutError
		switch {
		case errors.As(cause, &te):
			return te
		case errors.Is(cause, errCancelled):
			return errCancelled
		case ctx.Err() != nil:
			return errShutdown
		}
	}
	return err
}

// stage sends a schedule with the run's parallelism: each of the N workers sends the whole
// schedule, as N harness pods would. concurrency > 0 makes it a closed loop.
func (x *execution) stage(ctx context.Context, phase string, sched loadgen.Schedule, concurrency int, timeout time.Duration, measured bool, sink sinkFunc) error {
	seq := x.seq
	x.seq++
	if x.merge != nil {
		return x.merge.replay(seq, measured, func(rec loadgen.Record, gaps []float64) error {
			x.tally.add(rec, gaps, sink)
			return x.records.Record(rec)
		})
	}
	workers, base := x.plan.senders, 0 // senders w of this execution are the run's workers base+w
	if x.plan.worker != nil {
		base = x.plan.worker.Index
	}
	progresses := make([]*loadgen.Progress, workers)
	for w := range progresses {
		progresses[w] = &loadgen.Progress{}
	}
	x.progress.setInFlight(func() int64 {
		var n int64
		for _, p := range progresses {
			n += p.Snapshot().InFlight
		}
		return n
	})
	errs := make(chan error, workers)
	parallel := x.plan.parallel()
	for w := base; w < base+workers; w++ {
		progress := progresses[w-base]
		sched := sched
		if parallel {
			sched = workerSessions{Schedule: sched, worker: w}
		}
		cfg := loadgen.Config{BaseURL: x.plan.run.Internal.Endpoint, APIKey: x.plan.key, Model: x.plan.run.Internal.Model,
			API: x.plan.api, Stream: x.plan.stream, IgnoreEOS: x.plan.ignoreEOS, InterTokenTimes: x.plan.stream, RequestTimeout: timeout,
			Concurrency: concurrency, Seed: x.seed() + uint64(w)*7919, Progress: progress, Origin: x.origin,
			// The engine's lean HTTP/1.1 client, dialling only where the endpoint policy allows
			// (redirect targets included); x.r.client (net/http) serves the probes and the monitor.
			Dial:  x.r.deps.Egress.DialContext,
			RunID: fmt.Sprintf("%s-%s-w%d", x.plan.id()[:8], phase, w),
			// Fewer collections while the workload runs (loadgen's gcpace.go).
			GCHeadroomBytes: runGCHeadroomBytes}
		go func() {
			_, err := loadgen.RunSchedule(ctx, cfg, sched, loadgen.SinkFunc(func(rec loadgen.Record) error {
				rec.Metadata["phase"], rec.Metadata["worker"] = phase, w
				if !measured {
					return nil // warm-up requests are not recorded
				}
				if x.plan.repetitions() > 1 {
					rec.Metadata["repetition"] = x.tally.repetition()
				}
				if x.plan.worker != nil {
					// A worker's records keep their gaps and stage number for the owner's merge.
					rec.Metadata["seq"] = seq
				} else {
					x.tally.add(rec, takeGaps(rec.Metadata), sink)
				}
				x.progress.observe(rec)
				if rec.Successful {
					x.r.metrics.requests.WithLabelValues("success").Inc()
				} else {
					x.r.metrics.requests.WithLabelValues("failure").Inc()
				}
				return x.records.Record(rec)
			}))
			errs <- err
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// workerSessions is a schedule as worker w sends it: its sessions are the worker's own
// (w<k>-<session>), as they would be in N harness pods, so X-Session-ID never ties two workers'
// conversations together at a router.
type workerSessions struct {
	loadgen.Schedule
	worker int
}

func (s workerSessions) Load(i int, r *loadgen.Request) error {
	if err := s.Schedule.Load(i, r); err != nil {
		return err
	}
	if r.SessionID != "" {
		r.SessionID = fmt.Sprintf("w%d-%s", s.worker, r.SessionID)
	}
	return nil
}

// takeGaps removes the inter-token gaps from a record's metadata (they feed the ITL
// distribution; the artifact stays one short line per request).
func takeGaps(meta map[string]any) []float64 {
	raw, ok := meta["inter_token_ms"]
	delete(meta, "inter_token_ms")
	if !ok {
		return nil
	}
	gaps, _ := raw.([]float64)
	return gaps
}

// workloadOnce runs the run's workload once (one repetition) and stores its per-stage results
// in out.
func (x *execution) workloadOnce(ctx context.Context, out *outcome) error {
	spec := x.plan.spec
	switch {
	case len(spec.Matrix) > 0:
		return x.matrix(ctx, out)
	case spec.SharedPrefix != nil:
		return x.sharedPrefix(ctx, out)
	case spec.WorkloadYAML != nil:
		if x.plan.yamlErr != nil {
			return fmt.Errorf("the workload_yaml no longer parses: %v", x.plan.yamlErr)
		}
		w, sp := x.plan.yaml.Workload()
		if sp != nil {
			return x.sharedPrefixStages(ctx, sp, time.Duration(w.RequestTimeout*float64(time.Second)), out)
		}
		return x.named(ctx, w, out)
	}
	w, ok := evalrun.NamedWorkload(*spec.Workload)
	if !ok {
		return fmt.Errorf("workload %q is not shipped with Lensfn", *spec.Workload)
	}
	return x.named(ctx, w, out)
}

func (x *execution) matrix(ctx context.Context, out *outcome) error {
	spec := x.plan.spec
	stages := evalrun.Stages(spec)
	workers := int64(x.plan.senders)
	for range spec.Matrix {
		for _, st := range stages {
			x.planRequests(int64(st.NumRequests) * workers)
		}
	}
	if n := *spec.WarmupRequests; n > 0 && x.tally.repetition() == 0 { // the endpoint stays warm between repetitions
		p := spec.Matrix[0]
		warm := map[string]any{"isl": p.ISL, "osl": p.OSL, "num_requests": n, "status": "running", "stdout": "", "stderr": ""}
		err := x.invocation(ctx, evalrun.PhaseWarmup, func(ctx context.Context) error {
			return x.stage(ctx, evalrun.PhaseWarmup, workload.Fixed{N: n, ISL: p.ISL, OSL: p.OSL, Meta: map[string]any{}}, 1, 0, false, nil)
		})
		warm["status"] = "succeeded"
		if err != nil {
			warm["status"], warm["stderr"] = "failed", err.Error()
			out.warmup = warm
			return err
		}
		out.warmup = warm
	}
	var results []map[string]any
	defer func() { out.matrixResults = &results }()
	for i, p := range spec.Matrix {
		phase := evalrun.PhaseMatrix(i)
		point := x.tally.builder(fmt.Sprintf("point/%d", i))
		var stageMetrics []map[string]any
		err := x.invocation(ctx, phase, func(ctx context.Context) error {
			for j, st := range stages {
				b := x.tally.builder(fmt.Sprintf("stage/%d/%d", i, j))
				counting := []*evalrun.Builder{b, point, x.tally.total}
				meta := map[string]any{"stage": j, "concurrency": st.Concurrency, "isl": p.ISL, "osl": p.OSL}
				err := x.stage(ctx, phase, workload.Fixed{N: st.NumRequests, ISL: p.ISL, OSL: p.OSL, Meta: meta}, st.Concurrency, 0, true,
					func(loadgen.Record) []*evalrun.Builder { return counting })
				stageMetrics = append(stageMetrics, map[string]any{"concurrency": st.Concurrency, "num_requests": st.NumRequests,
					"metrics": x.tally.metrics(b, x.plan.recordsURI())})
				if err != nil {
					return err
				}
			}
			return nil
		})
		status := "succeeded"
		m := x.tally.metrics(point, x.plan.recordsURI())
		stderr := ""
		if err != nil {
			status, stderr = "failed", err.Error()
		} else if m["success_count"] == int64(0) {
			status, stderr = "failed", "every request of this point failed"
		}
		results = append(results, map[string]any{"isl": p.ISL, "osl": p.OSL, "stdout": "", "stderr": stderr, "status": status,
			"metrics": m, "stage_metrics": stageMetrics})
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *execution) sharedPrefix(ctx context.Context, out *outcome) error {
	return x.sharedPrefixStages(ctx, x.plan.spec.SharedPrefix, 120*time.Second, out)
}

// sharedPrefixStages runs shared-prefix rate stages in one invocation, each request bounded by
// timeout (0: none).
func (x *execution) sharedPrefixStages(ctx context.Context, sp *events.SharedPrefix, timeout time.Duration, out *outcome) error {
	seed := x.seed()
	if sp.Seed != nil {
		seed = uint64(*sp.Seed) + uint64(x.tally.repetition())*repetitionSeedStride
	}
	sched := workload.NewSharedPrefix(sp, seed)
	x.planRequests(int64(sched.Len()) * int64(x.plan.senders))
	builders := make([]*evalrun.Builder, len(sp.Stages))
	counting := make([][]*evalrun.Builder, len(sp.Stages)) // a stage's builder and the run's
	for i := range builders {
		builders[i] = x.tally.builder(fmt.Sprintf("rate/%d", i))
		counting[i] = []*evalrun.Builder{builders[i], x.tally.total}
	}
	x.rateStart = time.Since(x.started).Seconds()
	err := x.invocation(ctx, evalrun.PhaseBenchmark, func(ctx context.Context) error {
		return x.stage(ctx, evalrun.PhaseBenchmark, sched, 0, timeout, true, func(rec loadgen.Record) []*evalrun.Builder {
			if k, ok := rec.Metadata["stage"].(int); ok && k >= 0 && k < len(builders) {
				return counting[k]
			}
			return x.tally.totalOnly(rec)
		})
	})
	x.rateResults(out, builders, sp.Stages)
	return err
}

// rateResults stores rate_stage_results and the capacity analysis of a rate-stage run.
func (x *execution) rateResults(out *outcome, builders []*evalrun.Builder, stages []events.RateStage) {
	results := make([]map[string]any, len(stages))
	offset := 0.0
	for i, st := range stages {
		m := x.tally.metrics(builders[i], x.plan.recordsURI())
		results[i] = map[string]any{"rate": st.Rate, "duration": st.Duration, "metrics": m,
			"observability": map[string]any{"window": map[string]float64{"start": offset, "end": offset + st.Duration}}}
		offset += st.Duration
	}
	out.rateStageResults = results
	out.capacityAnalysis = capacity(results, x.plan.targets, *x.plan.spec.Parallelism, x.tally.repetition()+1)
}

func (x *execution) named(ctx context.Context, w evalrun.Workload, out *outcome) error {
	workers := int64(x.plan.senders)
	timeout := time.Duration(w.RequestTimeout * float64(time.Second))
	if len(w.ConcurrencyStages) > 0 {
		for _, st := range w.ConcurrencyStages {
			x.planRequests(int64(st.NumRequests) * workers)
		}
		return x.invocation(ctx, evalrun.PhaseBenchmark, func(ctx context.Context) error {
			for j, st := range w.ConcurrencyStages {
				sched := workload.Lengths{N: st.NumRequests, In: w.Input, Out: w.Output, Seed: x.seed(), Stage: uint64(j)}
				if err := x.stage(ctx, evalrun.PhaseBenchmark, sched, st.Concurrency, timeout, true, x.tally.totalOnly); err != nil {
					return err
				}
			}
			return nil
		})
	}
	sched := workload.NewNamed(w, x.seed())
	x.planRequests(int64(sched.Len()) * workers)
	return x.invocation(ctx, evalrun.PhaseBenchmark, func(ctx context.Context) error {
		return x.stage(ctx, evalrun.PhaseBenchmark, sched, 0, timeout, true, x.tally.totalOnly)
	})
}

// capacity is the capacity analysis of rate stages (lens-evaluation.md §5): a stage is stable
// when the SLA is met (success at least 99 % unless set) and the achieved rate is at least 95 %
// of the offered one.
// A stage's requests are those of all repetitions so far, each repetition one stage duration.
func capacity(stages []map[string]any, targets *events.SLATargets, parallelism, repetitions int) map[string]any {
	t := events.SLATargets{}
	if targets != nil {
		t = *targets
	}
	if t.SuccessRateMinPercent == nil {
		v := 99.0
		t.SuccessRateMinPercent = &v
	}
	var maxStable, goodput, violation, saturation any
	best := math.Inf(-1)
	rows := make([]map[string]any, 0, len(stages))
	for _, st := range stages {
		m := st["metrics"].(evalrun.Metrics)
		offered := st["rate"].(float64) * float64(parallelism)
		count, _ := m["request_count"].(int64)
		achieved := float64(count) / (st["duration"].(float64) * float64(repetitions))
		success, _ := m.Float("success_rate")
		sla := evalrun.EvaluateSLA(m, &t)
		loadMet := achieved >= 0.95*offered
		stable := sla.Met != nil && *sla.Met && loadMet
		rows = append(rows, map[string]any{"offered_rate_rps": offered, "achieved_rate_rps": math.Round(achieved*1000) / 1000,
			"success_rate": success, "stable": stable, "load_met": loadMet, "sla": sla})
		if stable && offered > best {
			best, maxStable = offered, offered
		}
		if g, ok := m["request_slo_goodput"].(map[string]any); ok {
			if v, ok := g["value"].(float64); ok && (goodput == nil || v > goodput.(float64)) {
				goodput = v
			}
		}
		if violation == nil && sla.Met != nil && !*sla.Met {
			violation = offered
		}
		if saturation == nil && !loadMet {
			saturation = offered
		}
	}
	return map[string]any{"method": "rate-stage-ladder", "maximum_stable_qps": maxStable, "slo_goodput_rps": goodput,
		"slo_violation_point": violation, "saturation_point": saturation, "rows": rows}
}

// runGCHeadroomBytes is the heap's room past its live part between collections while a
// workload runs. An open-loop stage against a fast endpoint keeps ~20 MB alive and makes ~17 MB
// of garbage a second at 5,000 req/s: at GOGC 100 that is a collection a second, and sends
// scheduled inside a concurrent mark are the schedule delay's tail; 64 MiB makes it one every
// ~4 s. At 4,096 in flight the live heap (~90 MB of connections) is past 64 MiB, so GOGC 100
// stays and the runner's peak RSS (the 200 MB target, tests/bench/evalrun RunnerStack) does not
// grow; GOMEMLIMIT (the manifest's) bounds the heap in every case.
const runGCHeadroomBytes = 64 << 20
