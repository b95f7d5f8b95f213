package evalrun_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// BenchmarkRepetitions is what N repetitions of a run cost in time, on the local stack over
// HTTP: one matrix run (one point 64/16, LENS_EVAL_REP_REQUESTS (400) streamed requests at
// concurrency 8, 2 warm-up requests) with repetitions 1, 3 and 5 on one stack, against a
// simulator answering in ~40 ms (TTFT 10 ms, 2 ms per further token). Per run: the wall time
// from POST to succeeded, the measured traffic (metrics.benchmark_time_seconds, the sum of the
// repetitions' spans), and the rest (monitoring preparation, warm-up, the gaps between
// repetitions, the metrics and the bootstrap replicates after the last request). Run with
// -benchtime 1x.
func BenchmarkRepetitions(b *testing.B) {
	requests := benchkit.EnvInt(b, "LENS_EVAL_REP_REQUESTS", 400)
	for b.Loop() {
		sim := startSimulator(b, "--time-to-first-token", "10ms", "--inter-token-latency", "2ms")
		s := startEvalStack(b, sim.base+"/v1")
		for _, reps := range []int{1, 3, 5} {
			body := fmt.Sprintf(`{"deployment_execution_id":%q,"matrix":[{"isl":64,"osl":16}],"warmup_requests":2,"repetitions":%d,`+
				`"concurrency_stages":[{"concurrency":8,"num_requests":%d}]}`, s.execID, reps, requests)
			posted := time.Now()
			code, raw := call(b, http.MethodPost, s.api+"/runs", body)
			var created struct {
				ID string `json:"id"`
			}
			if code != http.StatusAccepted || json.Unmarshal(raw, &created) != nil {
				b.Fatalf("POST /runs: %d %s", code, raw)
			}
			run := s.wait(b, created.ID, 10*time.Minute)
			wall := time.Since(posted).Seconds()
			traffic, _ := run.Metrics["benchmark_time_seconds"].(float64)
			if run.Metrics["request_count"] != float64(reps*requests) {
				b.Fatalf("%v requests, want %d", run.Metrics["request_count"], reps*requests)
			}
			b.ReportMetric(wall, fmt.Sprintf("n%d-wall-s", reps))
			b.ReportMetric(traffic, fmt.Sprintf("n%d-traffic-s", reps))
			b.ReportMetric(wall-traffic, fmt.Sprintf("n%d-other-s", reps))
		}
		b.ReportMetric(loadAverage(), "load-1m")
	}
}
