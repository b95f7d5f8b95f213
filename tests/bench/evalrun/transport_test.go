package evalrun_test

import (
	"net/http"
	"testing"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// BenchmarkTransportSideBySide compares the engine's two transports in one process against one
// simulator, interleaved (lean, net/http, lean, net/http, ...) so both see the same host load:
// a streamed closed loop as engine-stream runs it, LENS_EVAL_SIDE_CONCURRENCY (256) in flight,
// LENS_EVAL_SIDE_ROUNDS (2) rounds of a LENS_EVAL_WINDOW window each after LENS_EVAL_WARM.
// It reports each transport's client CPU per request (summed over its rounds) and their ratio.
// Cheap enough for a loaded host, unlike the 4,096-wide ClosedLoop.
func BenchmarkTransportSideBySide(b *testing.B) {
	shape := shapeOf(b)
	shape.concurrency = benchkit.EnvInt(b, "LENS_EVAL_SIDE_CONCURRENCY", 256)
	rounds := benchkit.EnvInt(b, "LENS_EVAL_SIDE_ROUNDS", 2)
	checkFileLimit(b, shape.concurrency)
	for b.Loop() {
		sim := startSimulator(b, simLatency(b)...)
		var cpu, requests [2]float64
		for round := 0; round < rounds; round++ {
			for t, client := range []func() *loadgen.Config{
				func() *loadgen.Config { return &loadgen.Config{Dial: egress.New(egress.Rules{}).DialContext} },
				func() *loadgen.Config {
					// net/http as the runner's endpoint client was: the policy's transport, tuned.
					tr := egress.New(egress.Rules{}).Transport()
					loadgen.TuneTransport(tr)
					return &loadgen.Config{Client: &http.Client{Transport: tr}}
				},
			} {
				w := engineWindow(b, sim, shape, *client(), true, "side")
				cpu[t] += float64(w.cpu.Microseconds())
				requests[t] += w.requests
				b.Logf("round %d %s: %.1f cpu-us/req over %.0f requests", round, []string{"lean", "net/http"}[t],
					float64(w.cpu.Microseconds())/w.requests, w.requests)
			}
		}
		lean, std := cpu[0]/requests[0], cpu[1]/requests[1]
		b.ReportMetric(lean, "lean-cpu-us/req")
		b.ReportMetric(std, "nethttp-cpu-us/req")
		b.ReportMetric(lean/std, "lean/nethttp")
		b.ReportMetric(loadAverage(), "load-1m")
	}
}
