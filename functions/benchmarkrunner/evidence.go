package benchmarkrunner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
)

// evidenceMonitor gathers a run's serving evidence and diagnostics around its traffic. Before
// it, prepare resolves the serving endpoints, waits until monitoring sees every one (monitor.ready)
// and checks the endpoint picker (diagnostics.go); during it, scrape samples the endpoints'
// /metrics (the scrape path; with a Prometheus it waits for the traffic to end); after it,
// window and stageEvidence derive the run's and each rate stage's evidence, and
// resourceSnapshot and diagnostics take the completion-time blocks.
//
// Locks: it has none of its own. monitor and epp are written by the execution's goroutine in
// prepare, before the scrape goroutine starts, and only read after; the samples the scrape
// goroutine collects are guarded by monitor.mu.
type evidenceMonitor struct {
	r       *Runner
	plan    *runPlan
	started time.Time // the zero of the monitor's clock (seconds), the execution's start

	monitor *monitor       // nil until prepared
	epp     map[string]any // the endpoint picker's readiness before traffic (nil: not checked)
}

func newEvidenceMonitor(r *Runner, plan *runPlan, started time.Time) *evidenceMonitor {
	return &evidenceMonitor{r: r, plan: plan, started: started}
}

// prepare makes the run's monitor and waits until it sees every serving endpoint, within ctx
// (the preparation's budget); the answer is the run's monitoring block.
func (mon *evidenceMonitor) prepare(ctx context.Context) (map[string]any, error) {
	var err error
	if mon.monitor, err = mon.newMonitor(ctx); err != nil {
		return nil, err
	}
	preflight, err := mon.monitor.ready(ctx, mon.plan.id())
	if err != nil {
		if errors.Is(context.Cause(ctx), errCancelled) {
			return nil, errCancelled
		}
		return nil, fmt.Errorf("serving monitoring was not ready within the %d s budget: %v", mon.plan.timeout, err)
	}
	preflight["endpoint_models"] = "ready"
	mon.epp = mon.eppReadiness(ctx)
	preflight["epp"] = mon.epp
	mon.r.runs.Logf(ctx, mon.plan.id(), "Monitoring ready: %s", mon.monitor.monitoredWhere())
	return map[string]any{"status": "ready", "source": mon.monitor.source(), "message": mon.monitor.describe(), "preparation": preflight}, nil
}

// newMonitor is the run's monitor: through the configured Prometheus (LENS_PROMETHEUS_URL) or,
// without one, the runner's own scrapes.
func (mon *evidenceMonitor) newMonitor(ctx context.Context) (*monitor, error) {
	endpoints, err := mon.r.servingEndpoints(ctx, mon.plan.run)
	if err != nil {
		return nil, err
	}
	var prom *promSource
	if u := mon.r.settings.PrometheusURL; u != "" {
		if prom, err = newPromSource(u, mon.r.settings.ScrapeInterval, mon.r.settings.PrometheusTargetsDir); err != nil {
			return nil, err
		}
	}
	return newMonitor(endpoints, mon.r.client, mon.started, prom), nil
}

// scrape samples the serving endpoints every scrape interval until the returned stop is called
// (stop waits for the last scrape to end). The monitor must be prepared.
func (mon *evidenceMonitor) scrape(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	scraped := make(chan struct{})
	go func() { defer close(scraped); mon.monitor.run(ctx, mon.r.settings.ScrapeInterval) }()
	return func() { cancel(); <-scraped }
}

// window is the serving evidence of the benchmark window [from, to] (seconds on the monitor's
// clock), collected from Prometheus first when there is one.
func (mon *evidenceMonitor) window(ctx context.Context, from, to float64) map[string]any {
	mon.monitor.finish(ctx, from, to)
	return mon.monitor.evidence(from, to)
}

// stageEvidence adds each rate stage's monitoring evidence: queue depth, running requests and
// the prefix cache hit rate over the stage's window (unavailable series stay null); rateStart is
// when the rate stages began on the monitor's clock.
func (mon *evidenceMonitor) stageEvidence(results []map[string]any, rateStart float64) {
	for _, st := range results {
		w := st["observability"].(map[string]any)["window"].(map[string]float64)
		ev := mon.monitor.evidence(rateStart+w["start"], rateStart+w["end"])
		m := st["metrics"].(evalrun.Metrics)
		for _, k := range []string{"queue_depth", "running_requests", "prefix_cache_hit_rate", "kv_cache_usage", "preemptions", "tokens_per_step", "mechanism_metrics"} {
			m[k] = ev[k]
		}
		st["observability"] = map[string]any{"window": w, "summary": ev["observability"]}
	}
}

// resourceSnapshot is the run's resource_snapshot, taken at completion (before any cleanup),
// after which the run's monitoring setup is released; unavailable when monitoring was never
// prepared.
func (mon *evidenceMonitor) resourceSnapshot(ctx context.Context) map[string]any {
	if mon.monitor == nil {
		return map[string]any{"status": "unavailable", "reason": "serving monitoring was not prepared",
			"captured_at": time.Now().UTC().Format(time.RFC3339Nano), "endpoints": []any{}}
	}
	snap := mon.monitor.snapshot(context.WithoutCancel(ctx))
	if err := mon.monitor.release(); err != nil {
		mon.r.log.Warnw("the run's Prometheus discovery file was not removed", "run", mon.plan.id(), "error", err)
	}
	return snap
}
