//go:build unix

package analysis_test

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
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

// realisticLines are per-request.jsonl lines as the load engine writes them: metadata with the
// request key, token source and every inter-token gap.
func realisticLines(lines int) []byte {
	var out bytes.Buffer
	count := 0
	millionRecords(func(r loadgen.Record) {
		if count < lines {
			gaps := make([]float64, int(r.OutputTokens)-1)
			for i := range gaps {
				gaps[i] = 7.25 + float64(i%13)/10
			}
			r.Metadata = map[string]any{"x_request_id": "lensfn-1a2b3c4d-" + strconv.Itoa(count), "requested_output_tokens": r.OutputTokens,
				"output_tokens_source": "usage", "inter_token_ms": gaps}
			line, _ := json.Marshal(r)
			out.Write(append(line, '\n'))
		}
		count++
	})
	return out.Bytes()
}

// BenchmarkReadRecords: decoding per-request.jsonl, the other half of the analyzer's cost, with
// and without building each record's metadata.
func BenchmarkReadRecords(b *testing.B) {
	const lines = 2_000
	input := realisticLines(lines)
	for _, variant := range []struct {
		name string
		read func(io.Reader, func(loadgen.Record) error) error
	}{{"full", analysis.ReadRecords}, {"without-metadata", analysis.ReadRecordsWithoutMetadata}} {
		b.Run(variant.name, func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			b.ReportAllocs()
			cpuStart := cpuTime()
			for b.Loop() {
				n := 0
				if err := variant.read(bytes.NewReader(input), func(loadgen.Record) error { n++; return nil }); err != nil || n != lines {
					b.Fatal(err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/record")
			b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/float64(b.N)/lines, "cpu-ns/record")
		})
	}
}

// BenchmarkResponseCodeIssues: scanning per-request.jsonl for one status (2 % of the lines).
func BenchmarkResponseCodeIssues(b *testing.B) {
	const lines = 2_000
	input := realisticLines(lines)
	filter, _ := analysis.ParseStatusCodeFilter("503")
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	cpuStart := cpuTime()
	for b.Loop() {
		page, err := analysis.ResponseCodeIssues(bytes.NewReader(input), filter, 0, analysis.DefaultIssueLimit)
		if err != nil || page.Total != lines/50 {
			b.Fatal(err, page.Total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/record")
	b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/float64(b.N)/lines, "cpu-ns/record")
}
