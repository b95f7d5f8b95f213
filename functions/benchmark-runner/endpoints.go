package benchmarkrunner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
)

// servingEndpoints are the endpoints a run's traffic reaches, which monitoring must see ready
// and collects evidence from. A deployment the deployer made records each replica's base URL
// (replica_endpoints: a router's replicas, a P/D deployment's prefill and decode pods), and
// those serve the requests the router forwards, so they are the serving endpoints; any other
// execution (an existing endpoint, a Model Service's active member) is its own one endpoint.
// A Model Service's other members receive none of the run's traffic and are not monitored.
func (r *Runner) servingEndpoints(ctx context.Context, run *evalrun.Run) ([]servingEndpoint, error) {
	raw := []string{run.Internal.Endpoint}
	if id := run.String("deployment_execution_id"); id != "" {
		e, err := r.uses.Execution(ctx, id)
		switch {
		case err == nil && len(e.ReplicaEndpoints) > 0:
			raw = e.ReplicaEndpoints
		case err != nil:
			// A static execution (not in the inventory), or a store hiccup: the run's own
			// endpoint is still known.
			r.log.Debugw("execution not read; monitoring the run's endpoint", "run", run.ID(), "execution", id, "error", err)
		}
	}
	if len(raw) > maxEndpoints {
		return nil, fmt.Errorf("the deployment has %d replica endpoints; monitoring follows at most %d", len(raw), maxEndpoints)
	}
	seen := map[string]bool{}
	var out []servingEndpoint
	for _, u := range raw {
		e, err := newServingEndpoint(u)
		if err != nil {
			return nil, err
		}
		if !seen[e.instance] {
			seen[e.instance] = true
			out = append(out, e)
		}
	}
	return out, nil
}

// newMonitor is the run's monitor: through the configured Prometheus (LENS_PROMETHEUS_URL) or,
// without one, the runner's own scrapes.
func (x *execution) newMonitor(ctx context.Context) (*monitor, error) {
	endpoints, err := x.r.servingEndpoints(ctx, x.plan.run)
	if err != nil {
		return nil, err
	}
	var prom *promSource
	if u := x.r.deps.Config.PrometheusURL; u != "" {
		if prom, err = newPromSource(u, x.r.settings.ScrapeInterval, x.r.deps.Config.PrometheusTargetsDir); err != nil {
			return nil, err
		}
	}
	return newMonitor(endpoints, x.r.client, x.started, prom), nil
}

// resourceSnapshot is the run's resource_snapshot, taken at completion (before any cleanup),
// after which the run's monitoring setup is released; unavailable when monitoring was never
// prepared.
func (x *execution) resourceSnapshot(ctx context.Context) map[string]any {
	if x.monitor == nil {
		return map[string]any{"status": "unavailable", "reason": "serving monitoring was not prepared",
			"captured_at": time.Now().UTC().Format(time.RFC3339Nano), "endpoints": []any{}}
	}
	snap := x.monitor.snapshot(context.WithoutCancel(ctx))
	if err := x.monitor.release(); err != nil {
		x.r.log.Warnw("the run's Prometheus discovery file was not removed", "run", x.plan.id(), "error", err)
	}
	return snap
}

// monitoringField is the run's monitoring block once preparation succeeded.
func (x *execution) monitoringField(preflight map[string]any) map[string]any {
	return map[string]any{"status": "ready", "source": x.monitor.source(), "message": x.monitor.describe(), "preparation": preflight}
}

// monitoredWhere names what is monitored, for the run's log.
func (m *monitor) monitoredWhere() string {
	names := make([]string, len(m.endpoints))
	for i, e := range m.endpoints {
		names[i] = e.instance
	}
	if m.prom != nil {
		return strings.Join(names, ", ") + " through Prometheus " + m.prom.shown
	}
	return strings.Join(names, ", ")
}
