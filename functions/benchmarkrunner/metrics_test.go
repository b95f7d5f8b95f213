package benchmarkrunner

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The runner's metrics keep their names, help and labels (dashboards and alerts use them).
func TestRunnerMetricsKeepTheirNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newRunnerMetrics(reg)
	m.Finished.WithLabelValues("succeeded").Inc()
	m.requests.WithLabelValues("success").Inc()
	want := `# HELP lens_benchmark_lost_runners_total Runs this instance failed because their runner's lease expired.
# TYPE lens_benchmark_lost_runners_total counter
lens_benchmark_lost_runners_total 0
# HELP lens_benchmark_requests_total Benchmark requests this instance completed, by outcome (success, failure).
# TYPE lens_benchmark_requests_total counter
lens_benchmark_requests_total{outcome="success"} 1
# HELP lens_benchmark_runs_active Benchmark runs executing on this instance now.
# TYPE lens_benchmark_runs_active gauge
lens_benchmark_runs_active 0
# HELP lens_benchmark_runs_finished_total Benchmark runs this instance finished, by status (succeeded, failed, cancelled, lease_lost).
# TYPE lens_benchmark_runs_finished_total counter
lens_benchmark_runs_finished_total{status="succeeded"} 1
# HELP lens_benchmark_runs_started_total Benchmark runs this instance claimed and started.
# TYPE lens_benchmark_runs_started_total counter
lens_benchmark_runs_started_total 0
# HELP lens_benchmark_workers_started_total Parallelism workers of benchmark runs this instance claimed and started.
# TYPE lens_benchmark_workers_started_total counter
lens_benchmark_workers_started_total 0
`
	// The whole exposition: a metric added, renamed or relabelled fails.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
