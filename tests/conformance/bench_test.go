package conformance_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/mooncake"
)

const mooncakeLines = 12031

// cpuTime is the process's user+system CPU time. The benchmark host is shared with other
// engineers, so wall-clock rates swing with their load; lines per CPU-second (all threads
// of this process, GC included) is the steadier "one core" figure.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportLines(b *testing.B, cpuStart time.Duration) {
	b.ReportMetric(float64(mooncakeLines*b.N)/b.Elapsed().Seconds(), "lines/s")
	if cpu := cpuTime() - cpuStart; cpu > 0 {
		b.ReportMetric(float64(mooncakeLines*b.N)/cpu.Seconds(), "lines/cpu-s")
	}
}

// BenchmarkMooncakeWASM parses the 12,031-line conversation trace through the host and the
// mooncake_trace module: read, feed 256 KiB chunks, decode records, window, emit.
func BenchmarkMooncakeWASM(b *testing.B) {
	path := filepath.Join(sharedTraces(b), "mooncake", "conversation_trace.jsonl")
	h := newHost(b, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(b), PoolSize: 1})
	p, err := h.Parser("mooncake_trace")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	emit := func(*wasmhost.TraceRequest) error { return nil }
	if _, err := p.Parse(ctx, wasmhost.Source{Path: path}, wasmhost.ParseOptions{}, emit); err != nil { // warm the instance
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := p.Parse(ctx, wasmhost.Source{Path: path}, wasmhost.ParseOptions{}, emit); err != nil {
			b.Fatal(err)
		}
	}
	reportLines(b, cpu)
}

// BenchmarkMooncakeNative runs the same core compiled natively, encoding every record as
// the guest does (the guest's work without the WASM boundary and the host's decoding).
func BenchmarkMooncakeNative(b *testing.B) {
	path := filepath.Join(sharedTraces(b), "mooncake", "conversation_trace.jsonl")
	var out []byte
	emit := func(r *abi.TraceRequest) error { out = abi.AppendRecord(out, r); return nil }
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		out = out[:0]
		if err := tracefmt.ParseFile(mooncake.New(), path, 256<<10, func(r *abi.TraceRequest) error {
			if len(out) > 1<<20 {
				out = out[:0]
			}
			return emit(r)
		}); err != nil {
			b.Fatal(err)
		}
	}
	reportLines(b, cpu)
}

// BenchmarkMooncakeNativeWithDecode adds the host's record decoding to the native run, so
// that it does the same total work as BenchmarkMooncakeWASM minus the guest boundary.
func BenchmarkMooncakeNativeWithDecode(b *testing.B) {
	path := filepath.Join(sharedTraces(b), "mooncake", "conversation_trace.jsonl")
	var out []byte
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := tracefmt.ParseFile(mooncake.New(), path, 256<<10, func(r *abi.TraceRequest) error {
			out = abi.AppendRecord(out[:0], r)
			return abi.DecodeRecords(out, func(*abi.TraceRequest) error { return nil })
		}); err != nil {
			b.Fatal(err)
		}
	}
	reportLines(b, cpu)
}

const (
	jitterConfig = `{"prefill-overhead":"3ms","prefill-time-per-token":"20us","prefill-time-std-dev":"1ms",
		"inter-token-latency":"2ms","inter-token-latency-std-dev":"500us","time-factor-under-load":2}`
	steadyConfig = `{"prefill-overhead":"3ms","prefill-time-per-token":"20us","inter-token-latency":"2ms","time-factor-under-load":2}`
)

func benchmarkSchedule(b *testing.B, config string, outputTokens int) {
	h := newHost(b, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(b), PoolSize: 1})
	calc, err := h.Calculator("per-token", []byte(config))
	if err != nil {
		b.Fatal(err)
	}
	in := latency.Input{PromptTokens: 2000, CachedPromptTokens: 512, OutputTokens: outputTokens, RunningRequests: 3, MaxNumSeqs: 8}
	var gaps []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in.Rand = uint64(i)
		_, gaps, err = calc.Schedule(in, gaps)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// One guest call per request: TTFT plus every inter-token gap.
func BenchmarkScheduleWASM1Token(b *testing.B)          { benchmarkSchedule(b, jitterConfig, 1) }
func BenchmarkScheduleWASM128Tokens(b *testing.B)       { benchmarkSchedule(b, steadyConfig, 128) }
func BenchmarkScheduleWASM128TokensJitter(b *testing.B) { benchmarkSchedule(b, jitterConfig, 128) }

func BenchmarkScheduleNative128TokensJitter(b *testing.B) {
	m, err := latency.PerToken.New([]byte(jitterConfig))
	if err != nil {
		b.Fatal(err)
	}
	var gaps []time.Duration
	for i := 0; i < b.N; i++ {
		if _, gaps, err = m.Schedule(latencyInput(i), gaps); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostLoadWarm measures New over every built-in module with a warm on-disk
// compilation cache: manifests, sha256, compile (from cache), first instance and checks.
func BenchmarkHostLoadWarm(b *testing.B) {
	dir := wasmtest.BuiltinDir(b)
	cache := wasmtest.CacheDir(b)
	ctx := context.Background()
	warm, err := wasmhost.New(ctx, wasmhost.Config{BuiltinDir: dir, CacheDir: cache})
	if err != nil {
		b.Fatal(err)
	}
	warm.Close(ctx)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := wasmhost.New(ctx, wasmhost.Config{BuiltinDir: dir, CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		h.Close(ctx)
		b.StartTimer()
	}
}

func latencyInput(i int) latency.Input {
	return latency.Input{PromptTokens: 2000, CachedPromptTokens: 512, OutputTokens: 128, RunningRequests: 3, MaxNumSeqs: 8, Rand: uint64(i)}
}

// benchmarkStepTime prices one engine step of ABI.md's first worked example (Llama-2-7B on
// an H100, a prompt chunk beside 31 decodes) per iteration through a StepCost: a pool
// checkout, one guest call with seven values, no memory traffic.
func benchmarkStepTime(b *testing.B, sc *wasmhost.StepCost) {
	ex := abi.StepCostExamples[0]
	batch := stepcost.BatchOf(ex.Args)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch.DecodeContext = 40000 + i&1023
		if _, err := sc.StepTimeErr(&batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepTimeWASM: the built-in stepcost module (no interruption checks).
func BenchmarkStepTimeWASM(b *testing.B) {
	h := newHost(b, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(b), PoolSize: 1})
	sc, err := h.StepCostJSON(stepcost.ModuleName, []byte(abi.StepCostExamples[0].Config))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkStepTime(b, sc)
}

// BenchmarkStepTimeWASMUser: the same module as a user's (by path, in the runtime that
// interrupts a call past Config.CallTimeout).
func BenchmarkStepTimeWASMUser(b *testing.B) {
	mine := wasmtest.UserCopy(b, stepcost.ModuleName, "mine.wasm")
	h := newHost(b, wasmhost.Config{PoolSize: 1})
	sc, err := h.StepCostJSON(mine, []byte(abi.StepCostExamples[0].Config))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkStepTime(b, sc)
}

// BenchmarkStepTimeNative: the same steps priced by the step-cost core.
func BenchmarkStepTimeNative(b *testing.B) {
	ex := abi.StepCostExamples[0]
	m, err := stepcost.ParseConfig([]byte(ex.Config))
	if err != nil {
		b.Fatal(err)
	}
	batch := stepcost.BatchOf(ex.Args)
	var sum float64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		batch.DecodeContext = 40000 + i&1023
		sum += m.StepTime(&batch)
	}
	if sum < 0 {
		b.Fatal(sum)
	}
}
