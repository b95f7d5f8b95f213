package replay_test

import (
	"sort"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// BenchmarkSchedulingFloor is the machine's part of the drift: a bare loop that only sleeps to
// the same absolute send times (LENS_REPLAY_RATE for LENS_REPLAY_SECONDS) and measures how late
// it wakes, with no HTTP, no records and no other goroutines. Run it next to
// BenchmarkReplayConstantRate; the engine cannot do better than this on a loaded machine.
func BenchmarkSchedulingFloor(b *testing.B) {
	rate := benchkit.EnvInt(b, "LENS_REPLAY_RATE", 2000)
	seconds := benchkit.EnvInt(b, "LENS_REPLAY_SECONDS", 30)
	n := rate * seconds
	for b.Loop() {
		lag := make([]float64, 0, n)
		start := time.Now()
		for i := 0; i < n; i++ {
			target := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
			if d := time.Until(target); d > 0 {
				time.Sleep(d)
			}
			lag = append(lag, float64(time.Since(target))/float64(time.Millisecond))
		}
		sort.Float64s(lag)
		b.ReportMetric(benchkit.Percentile(lag, 50), "lag-p50-ms")
		b.ReportMetric(benchkit.Percentile(lag, 90), "lag-p90-ms")
		b.ReportMetric(benchkit.Percentile(lag, 99), "lag-p99-ms")
		b.ReportMetric(lag[n-1], "lag-max-ms")
	}
}
