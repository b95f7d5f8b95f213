package benchmarkrunner

import (
	"context"
	"fmt"
	"strings"

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
	if id := evalrun.Str(run.DeploymentExecutionID); id != "" {
		e, err := r.uses.Execution(ctx, id)
		switch {
		case err == nil && len(e.ReplicaEndpoints) > 0:
			raw = e.ReplicaEndpoints
		case err != nil:
			// A static execution (not in the inventory), or a store hiccup: the run's own
			// endpoint is still known.
			r.log.Debugw("execution not read; monitoring the run's endpoint", "run", run.ID, "execution", id, "error", err)
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
