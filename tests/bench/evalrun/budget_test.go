package evalrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// BenchmarkInFlightBudget runs the worst request POST /runs accepts at the longest prompts:
// isl + osl = 131,072 tokens at the highest concurrency the in-flight memory budget allows
// (LENS_BUDGET_CONCURRENCY, default 255; isl is what the budget leaves, at most 131,072), two full rounds
// against a simulator answering in 1 s so every request is in flight at once. It checks the
// request is accepted and one more request in flight is not, then reports the peak RSS
// (VmHWM) of the runner's engine (this process: runtime/loadgen with the runner's per-record
// work) and of the simulator, and fails when either passes evalrun.InFlightMemoryBudgetBytes.
func BenchmarkInFlightBudget(b *testing.B) {
	concurrency := 255
	if v := os.Getenv("LENS_BUDGET_CONCURRENCY"); v != "" {
		concurrency, _ = strconv.Atoi(v)
	}
	isl, osl := min(evalrun.InFlightTokenBudget/concurrency-1, evalrun.MaxInputTokens), 1
	spec := func(c int) events.BenchmarkSpec {
		return events.BenchmarkSpec{Matrix: []events.MatrixPoint{{ISL: isl, OSL: osl}},
			ConcurrencyStages: []events.ConcurrencyStage{{Concurrency: c, NumRequests: 2 * c}}}
	}
	if err := evalrun.ValidateSpec(spec(concurrency)); err != nil {
		b.Fatalf("the benchmark's request is refused: %v", err)
	}
	if evalrun.ValidateSpec(spec(concurrency+1)) == nil {
		b.Fatalf("concurrency %d is accepted too: this is not the worst accepted request", concurrency+1)
	}
	checkFileLimit(b, concurrency)
	for b.Loop() {
		sim := startSimulator(b, "--max-model-len", strconv.Itoa(isl+osl), "--max-num-seqs", strconv.Itoa(concurrency),
			"--time-to-first-token", "1s")
		sink, closeSink, err := runnerSink(filepath.Join(b.TempDir(), evalrun.RecordsFile))
		if err != nil {
			b.Fatal(err)
		}
		var failed atomic.Int64
		counting := loadgen.SinkFunc(func(rec loadgen.Record) error {
			if !rec.Successful {
				failed.Add(1)
			}
			return sink.Record(rec)
		})
		cfg := loadgen.Config{BaseURL: sim.base + "/v1", Model: simModel, API: loadgen.APICompletions, Stream: true,
			IgnoreEOS: true, InterTokenTimes: true, Concurrency: concurrency, Seed: 1, RunID: "budget"}
		start := time.Now()
		_, err = loadgen.RunSchedule(context.Background(), cfg, fixedLengths{n: 2 * concurrency, isl: isl, osl: osl,
			meta: map[string]any{"stage": 0, "concurrency": concurrency, "isl": isl, "osl": osl}}, counting)
		if err != nil {
			b.Fatal(err)
		}
		if err := closeSink(); err != nil {
			b.Fatal(err)
		}
		runnerKB, _ := procStatusKB(os.Getpid(), "VmHWM")
		simKB, _ := procStatusKB(sim.pid, "VmHWM")
		b.ReportMetric(float64(runnerKB)/1024, "runner-peak-MiB")
		b.ReportMetric(float64(simKB)/1024, "sim-peak-MiB")
		b.ReportMetric(float64(failed.Load()), "failed-requests")
		b.Logf("isl %d osl %d x concurrency %d (%d tokens in flight, budget %d): runner peak %d MiB, simulator peak %d MiB, %d failed, %.1fs, load %.2f",
			isl, osl, concurrency, (isl+osl)*concurrency, evalrun.InFlightTokenBudget, runnerKB>>10, simKB>>10, failed.Load(),
			time.Since(start).Seconds(), loadAverage())
		if failed.Load() > 0 {
			b.Errorf("%d of %d requests failed", failed.Load(), 2*concurrency)
		}
		for name, kb := range map[string]int64{"runner": runnerKB, "simulator": simKB} {
			if kb<<10 > evalrun.InFlightMemoryBudgetBytes {
				b.Errorf("the %s peaked at %d MiB, over the %d MiB budget", name, kb>>10, evalrun.InFlightMemoryBudgetBytes>>20)
			}
		}
	}
}
