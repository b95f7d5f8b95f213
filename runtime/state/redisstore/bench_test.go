package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

const benchTasks = 100_000

var (
	benchOnce   sync.Once
	benchStore  *redisstore.Store
	benchPrefix string
	benchErr    error
)

// loadedStore returns a store holding benchTasks tasks, loaded once per test binary run
// (TestMain drops its keys at exit).
func loadedStore(b *testing.B) *redisstore.Store {
	benchOnce.Do(func() {
		ctx := context.Background()
		benchPrefix = uniquePrefix()
		benchStore, benchErr = redisstore.Open(ctx, redisURL(b), redisstore.Options{Prefix: benchPrefix})
		if benchErr != nil {
			return
		}
		statuses := []string{"queued", "running", "completed", "failed", "cancelled"}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		batch := make([]state.Record, 0, 1000)
		for i := range benchTasks {
			batch = append(batch, state.Record{
				Kind: "task", ID: fmt.Sprintf("%08x", i), Status: statuses[i%5],
				CreatedAt: start.Add(time.Duration(i) * 7 * time.Second),
				Attrs: map[string]string{
					"backend":      []string{"trace-replayer", "aiperf"}[i%2],
					"model":        fmt.Sprintf("model-%d", (i/5)%10),
					"dataset":      fmt.Sprintf("dataset-%d", i%20),
					"trace_format": fmt.Sprintf("format-%d", i%5),
					"endpoint":     fmt.Sprintf("http://127.0.0.1:%d/v1", 38000+i%10),
					"scenario":     []string{"chat", "code", "summarize"}[i%3],
				},
				Search: fmt.Sprintf("trace simulation %d", i),
				Doc:    fmt.Appendf(nil, `{"id":"%08x","name":"Trace simulation %d","progress_percent":42.5,"simulation":{"backend":"trace-replayer","duration_seconds":60}}`, i, i),
			})
			if len(batch) == cap(batch) {
				if benchErr = benchStore.CreateBatch(ctx, batch); benchErr != nil {
					return
				}
				batch = batch[:0]
			}
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

// BenchmarkListTwoFilters lists the first page (20 rows) of status=completed AND
// model=model-3 (2,000 of 100,000 tasks). "cold" changes one record's status before each
// call so the intersection is rebuilt every time; "warm" reuses it as the next pages do.
// Reports the median and p99 latency.
func BenchmarkListTwoFilters(b *testing.B) {
	q := state.Query{Kind: "task", Status: []string{"completed"}, Attrs: map[string]string{"model": "model-3"}, Limit: 20}
	benchmarkList(b, q, 2000)
}

// BenchmarkListSearch lists with a search needle over all 100,000 tasks: a server-side scan
// when cold, a cached match set when warm.
func BenchmarkListSearch(b *testing.B) {
	q := state.Query{Kind: "task", Search: "Simulation 4242", Limit: 20}
	benchmarkList(b, q, 11) // 4242 and 42420..42429
}

func benchmarkList(b *testing.B, q state.Query, wantTotal int) {
	if testing.Short() {
		b.Skip("loads 100,000 records")
	}
	s := loadedStore(b)
	ctx := context.Background()
	for _, cold := range []bool{true, false} {
		b.Run(map[bool]string{true: "cold", false: "warm"}[cold], func(b *testing.B) {
			durations := make([]time.Duration, 0, b.N)
			flip := []string{"queued", "running"}
			for i := 0; b.Loop(); i++ {
				if cold {
					b.StopTimer()
					r, err := s.Get(ctx, "task", "00000000")
					if err != nil {
						b.Fatal(err)
					}
					r.Status = flip[i%2]
					if _, err := s.Update(ctx, r, state.UpdateOptions{}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				start := time.Now()
				p, err := s.List(ctx, q)
				durations = append(durations, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if p.Total != wantTotal || len(p.Records) != min(wantTotal, q.Limit) {
					b.Fatalf("total %d, %d records; want %d", p.Total, len(p.Records), wantTotal)
				}
			}
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(durations[(len(durations)*99)/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkRecordRoundTrip is the store's everyday path: Get a record and Update its status
// (one read, one optimistic write through the Lua script), against REDIS_URL or the embedded
// server. Besides ns/op it reports the client's CPU per operation (this process's user+sys, so
// with REDIS_URL pointing at a redis-server it is the client alone): what compiling the Redis
// client without inlining would cost (#11).
func BenchmarkRecordRoundTrip(b *testing.B) {
	s := openStore(b, redisstore.Options{})
	ctx := context.Background()
	r, err := s.Create(ctx, state.Record{Kind: "task", ID: "bench", Status: "queued", Attrs: map[string]string{"model": "m"},
		Doc: []byte(`{"id":"bench","progress_percent":42.5}`)})
	if err != nil {
		b.Fatal(err)
	}
	flip := []string{"queued", "running"}
	cpu0 := processCPU()
	for i := 0; b.Loop(); i++ {
		got, err := s.Get(ctx, "task", r.ID)
		if err != nil {
			b.Fatal(err)
		}
		got.Status = flip[i%2]
		if _, err := s.Update(ctx, got, state.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "client-cpu-us/op")
}

// processCPU is this process's user+sys CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
