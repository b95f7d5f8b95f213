package tracereplayer

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The runner's job metrics keep their names, help and labels (dashboards and alerts use them):
// the replayer's and the aiperf backend's, each under its prefix.
func TestRunnerMetricsKeepTheirNames(t *testing.T) {
	for _, prefix := range []string{"lens_replayer", "lens_aiperf"} {
		reg := prometheus.NewRegistry()
		m := newRunnerMetrics(reg, prefix)
		m.Finished.WithLabelValues("completed").Inc()
		want := strings.ReplaceAll(`# HELP lens_replayer_lost_runners_total Running tasks this instance failed because their runner's lease expired.
# TYPE lens_replayer_lost_runners_total counter
lens_replayer_lost_runners_total 0
# HELP lens_replayer_tasks_active Replays running on this instance now.
# TYPE lens_replayer_tasks_active gauge
lens_replayer_tasks_active 0
# HELP lens_replayer_tasks_finished_total Replays this instance finished, by outcome (completed, cancelled, failed, lease_lost).
# TYPE lens_replayer_tasks_finished_total counter
lens_replayer_tasks_finished_total{outcome="completed"} 1
# HELP lens_replayer_tasks_started_total Simulation tasks this instance claimed and started.
# TYPE lens_replayer_tasks_started_total counter
lens_replayer_tasks_started_total 0
`, "lens_replayer", prefix)
		// The whole exposition: a metric added, renamed or relabelled fails.
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	}
}
