package evalrun_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/evalrun"
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
				w := sideLoop(b, sim, shape, client())
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

// sideLoop runs one closed loop with cfg's transport and measures it.
func sideLoop(b *testing.B, sim *simulator, shape loopShape, cfg *loadgen.Config) window {
	sink, closeSink, err := runnerSink(filepath.Join(b.TempDir(), evalrun.RecordsFile))
	if err != nil {
		b.Fatal(err)
	}
	progress := &loadgen.Progress{}
	cfg.BaseURL, cfg.Model, cfg.API = sim.base+"/v1", simModel, loadgen.APICompletions
	cfg.Stream, cfg.IgnoreEOS, cfg.InterTokenTimes = true, true, true
	cfg.Concurrency, cfg.Seed, cfg.Progress, cfg.RunID = shape.concurrency, 1, progress, "side"
	cfg.Duration = 30*time.Second + shape.warm + shape.window
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		_, runErr = loadgen.RunSchedule(ctx, *cfg, fixedLengths{n: shape.requests, isl: shape.isl, osl: shape.osl,
			meta: map[string]any{"stage": 0, "concurrency": shape.concurrency, "isl": shape.isl, "osl": shape.osl}}, sink)
	}()
	cpu := func() (time.Duration, error) {
		select {
		case <-done:
			return 0, fmt.Errorf("the engine's run ended: %v", runErr)
		default:
			return benchkit.CPUTime(), nil
		}
	}
	w := measure(b, sim, shape, cpu, func() float64 { return float64(progress.Snapshot().InFlight) })
	cancel()
	<-done
	if runErr != nil && ctx.Err() == nil {
		b.Fatal(runErr)
	}
	if err := closeSink(); err != nil {
		b.Fatal(err)
	}
	if cfg.Client != nil {
		cfg.Client.CloseIdleConnections()
	}
	return w
}
