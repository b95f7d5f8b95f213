package evalrun_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// poissonStage is one shared-prefix rate stage as the benchmark-runner lays it out: Poisson
// arrivals (exponential gaps) on an absolute clock, request k in group k mod groups whose system
// prompt is one shared hash block, then a question of its own.
type poissonStage struct {
	arrivals                 []float64 // ms
	groups, system, question int
	osl                      int
	meta                     map[string]any
}

func newPoissonStage(rate float64, seconds float64, seed uint64) *poissonStage {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &poissonStage{groups: 8, system: 48, question: 16, osl: 16, meta: map[string]any{"stage": 0}}
	for t := rng.ExpFloat64() / rate; t < seconds; t += rng.ExpFloat64() / rate {
		s.arrivals = append(s.arrivals, t*1000)
	}
	return s
}

func (s *poissonStage) Len() int { return len(s.arrivals) }

func (s *poissonStage) Load(i int, r *loadgen.Request) error {
	at := s.arrivals[i]
	*r = loadgen.Request{ArrivalMs: &at, InputTokens: s.system + s.question, OutputTokens: s.osl, Metadata: s.meta,
		HashIDs: []int64{int64(i % s.groups)}, BlockSize: s.system}
	return nil
}

// BenchmarkPoissonStage sends one Poisson rate stage of LENS_EVAL_RATE req/s (default 5,000) for
// LENS_EVAL_SECONDS (30), streamed completions with ignore_eos (64-token prompts sharing a
// 48-token system prompt per group, 16 output tokens), against a zero-latency simulator, with
// the runner's per-record work (builders and the JSONL artifact). Run with -benchtime 1x.
//
// Schedule delay = started - scheduled per request on the run's absolute clock. The achieved
// rate is (n-1) / (last send - first send); its error is against the schedule's own rate over the
// same requests ((n-1) / (last scheduled - first scheduled)), because a Poisson schedule of 30 s
// at 5,000/s is itself ~0.26 % (one standard deviation) off the nominal rate; the error against
// the nominal rate is reported too.
func BenchmarkPoissonStage(b *testing.B) {
	rate := float64(benchkit.EnvInt(b, "LENS_EVAL_RATE", 5000))
	seconds := float64(benchkit.EnvInt(b, "LENS_EVAL_SECONDS", 30))
	// The benchmark-runner's setting (its runGCHeadroomBytes); 0 leaves the collector alone,
	// for comparing.
	gcHeadroomMiB := 64
	if v := os.Getenv("LENS_EVAL_GC_HEADROOM_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<20 {
			b.Fatalf("LENS_EVAL_GC_HEADROOM_MIB=%q: want a number of MiB >= 0", v)
		}
		gcHeadroomMiB = n
	}
	checkFileLimit(b, 4096)
	for b.Loop() {
		sim := startSimulator(b)
		stage := newPoissonStage(rate, seconds, 1)
		n := stage.Len()
		sink, closeSink, err := runnerSink(filepath.Join(b.TempDir(), evalrun.RecordsFile))
		if err != nil {
			b.Fatal(err)
		}
		delay := make([]float64, 0, n)
		starts := make([]float64, 0, n)
		scheduled := make([]float64, 0, n)
		successful := 0
		collect := loadgen.SinkFunc(func(r loadgen.Record) error {
			delay = append(delay, (r.StartedAtSeconds-r.ScheduledAtSeconds)*1000)
			starts = append(starts, r.StartedAtSeconds)
			scheduled = append(scheduled, r.ScheduledAtSeconds)
			if r.Successful {
				successful++
			}
			return sink.Record(r)
		})
		cfg := loadgen.Config{BaseURL: sim.base + "/v1", Model: simModel, API: loadgen.APICompletions, Stream: true, IgnoreEOS: true,
			InterTokenTimes: true, Seed: 1, RunID: "bench", RequestTimeout: 120 * time.Second,
			GCHeadroomBytes: int64(gcHeadroomMiB) << 20}
		var mem0, mem1 runtime.MemStats
		runtime.ReadMemStats(&mem0)
		cpu0 := benchkit.CPUTime()
		st, err := loadgen.RunSchedule(context.Background(), cfg, stage, collect)
		cpu := benchkit.CPUTime() - cpu0
		runtime.ReadMemStats(&mem1)
		if err != nil {
			b.Fatal(err)
		}
		if err := closeSink(); err != nil {
			b.Fatal(err)
		}
		if st.Sent != int64(n) || len(delay) != n {
			b.Fatalf("sent %d, recorded %d of %d", st.Sent, len(delay), n)
		}
		sortedDelay, sortedStarts, sortedSched := sortedCopy(delay), sortedCopy(starts), sortedCopy(scheduled)
		achieved := float64(n-1) / (sortedStarts[n-1] - sortedStarts[0])
		planned := float64(n-1) / (sortedSched[n-1] - sortedSched[0])
		b.ReportMetric(benchkit.Percentile(sortedDelay, 50), "delay-p50-ms")
		b.ReportMetric(benchkit.Percentile(sortedDelay, 90), "delay-p90-ms")
		b.ReportMetric(benchkit.Percentile(sortedDelay, 99), "delay-p99-ms")
		b.ReportMetric(sortedDelay[n-1], "delay-max-ms")
		b.ReportMetric(achieved, "achieved-rps")
		b.ReportMetric(100*math.Abs(achieved-planned)/planned, "rate-err-%")
		b.ReportMetric(100*math.Abs(achieved-rate)/rate, "nominal-rate-err-%")
		b.ReportMetric(100*float64(successful)/float64(n), "success-%")
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-us/req")
		// The whole test process's allocations over the run (the engine, the sink's builders
		// and artifact, this collector's three numbers per request), per request.
		b.ReportMetric(float64(mem1.Mallocs-mem0.Mallocs)/float64(n), "allocs/req")
		b.ReportMetric(float64(mem1.TotalAlloc-mem0.TotalAlloc)/float64(n), "bytes/req")
		b.ReportMetric(float64(mem1.NumGC-mem0.NumGC), "gc-cycles")
		b.ReportMetric(float64(mem1.PauseTotalNs-mem0.PauseTotalNs)/1e6, "gc-pause-ms")
		b.ReportMetric(loadAverage(), "load-1m")
		b.ReportMetric(float64(gcHeadroomMiB), "gc-headroom-MiB")
		if path := os.Getenv("LENS_EVAL_DELAY_DUMP"); path != "" {
			dumpDelays(b, path, st.Started, scheduled, starts, &mem1)
		}
	}
}

// dumpDelays writes, for telling what a delay tail is made of offline, the run's start (Unix
// ns), every request's scheduled and started offsets (s), and the end and length of every
// garbage collection's pauses (Unix ns, ns) that MemStats still holds (the last 256). With
// GODEBUG=gctrace=1 on the same run, each cycle's trace line gives its concurrent phase's
// wall-clock length, which the pause ends place on the run's clock. Nothing of this runs
// unless LENS_EVAL_DELAY_DUMP names the file.
func dumpDelays(b *testing.B, path string, start time.Time, scheduled, started []float64, mem *runtime.MemStats) {
	var out bytes.Buffer
	fmt.Fprintf(&out, "start %d\n", start.UnixNano())
	for k := range scheduled {
		fmt.Fprintf(&out, "r %.9f %.9f\n", scheduled[k], started[k])
	}
	for k := uint32(0); k < min(mem.NumGC, 256); k++ {
		at := (mem.NumGC - 1 - k) % 256
		fmt.Fprintf(&out, "gc %d %d %d\n", mem.NumGC-k, mem.PauseEnd[at], mem.PauseNs[at])
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
}
