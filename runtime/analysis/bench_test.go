//go:build unix

package analysis_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// millionRecords feeds fn a deterministic one-hour run of 1,000,000 requests (about 278/s, 2 %
// failed) built on the fly, so the benchmark measures the accumulator rather than a 250 MB
// slice of records.
func millionRecords(fn func(loadgen.Record)) {
	const n = 1_000_000
	ok, unavailable := 200, 503
	ttft, tpot := new(float64), new(float64)
	state := uint64(42)
	for i := range n {
		state = state*6364136223846793005 + 1442695040888963407
		jitter := float64(state>>40) / (1 << 24) // [0, 1)
		scheduled := float64(i) * 3600 / n
		latency := 200 + 3000*jitter*jitter
		rec := loadgen.Record{
			RequestID: int64(i + 1), StatusCode: &ok, Successful: true,
			ScheduledAtSeconds: scheduled, StartedAtSeconds: scheduled + jitter/1000,
			CompletedAtSeconds: scheduled + jitter/1000 + latency/1000, LatencyMs: latency,
			InputTokens: 512 + float64(i%1024), OutputTokens: 128 + float64(i%256),
		}
		if i%50 == 0 {
			rec.StatusCode, rec.Successful = &unavailable, false
		} else {
			*ttft, *tpot = latency/8, latency/300
			rec.TTFTMs, rec.TPOTMs = ttft, tpot
		}
		fn(rec)
	}
}

// cpuTime is the process's user+system CPU time. Benchmarks report it per record beside the
// wall time because the 2-core machine is shared: CPU time is what the work costs, wall time
// also counts waiting for a core.
func cpuTime() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkAccumulator1M: Add a million records and compute the summary. ns/record covers both;
// retained-B/record is the heap the accumulator holds before Summary.
func BenchmarkAccumulator1M(b *testing.B) {
	b.ReportAllocs()
	var retained uint64
	cpuStart := cpuTime()
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		acc, err := analysis.New(analysis.Options{DurationSeconds: 3600, SLO: &analysis.SLO{TTFTSeconds: 0.2}})
		if err != nil {
			b.Fatal(err)
		}
		millionRecords(func(r loadgen.Record) {
			if err := acc.Add(r); err != nil {
				b.Fatal(err)
			}
		})
		runtime.GC()
		runtime.ReadMemStats(&after)
		retained = after.HeapAlloc - before.HeapAlloc
		s, err := acc.Summary()
		if err != nil || s.TotalRequests != 1_000_000 || len(s.CompletionTimeline) != 120 {
			b.Fatalf("summary: %v, %d requests", err, s.TotalRequests)
		}
		runtime.KeepAlive(acc)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/record")
	b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/float64(b.N)/1e6, "cpu-ns/record")
	b.ReportMetric(float64(retained)/1e6, "retained-B/record")
}

// BenchmarkReadRecords: decoding per-request.jsonl lines, the other half of the analyzer's cost.
func BenchmarkReadRecords(b *testing.B) {
	var line []byte
	millionRecords(func(r loadgen.Record) {
		if line == nil {
			r.Metadata = map[string]any{}
			line, _ = json.Marshal(r)
		}
	})
	const lines = 10_000
	input := bytes.Repeat(append(line, '\n'), lines)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	cpuStart := cpuTime()
	for b.Loop() {
		n := 0
		if err := analysis.ReadRecords(bytes.NewReader(input), func(loadgen.Record) error { n++; return nil }); err != nil || n != lines {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/record")
	b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/float64(b.N)/lines, "cpu-ns/record")
}

// BenchmarkResponseCodeIssues: scanning per-request.jsonl for one status (2 % of the lines).
func BenchmarkResponseCodeIssues(b *testing.B) {
	var input bytes.Buffer
	count := 0
	millionRecords(func(r loadgen.Record) {
		if count < 10_000 {
			r.Metadata = map[string]any{}
			line, _ := json.Marshal(r)
			input.Write(append(line, '\n'))
		}
		count++
	})
	filter, _ := analysis.ParseStatusCodeFilter("503")
	b.SetBytes(int64(input.Len()))
	b.ReportAllocs()
	cpuStart := cpuTime()
	for b.Loop() {
		page, err := analysis.ResponseCodeIssues(bytes.NewReader(input.Bytes()), filter, 0, analysis.DefaultIssueLimit)
		if err != nil || page.Total != 200 {
			b.Fatal(err, page.Total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/record")
	b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/float64(b.N)/10_000, "cpu-ns/record")
}
