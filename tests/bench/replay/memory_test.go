package replay_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/tracereplayer"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/tracespool"
	"github.com/lensfn/lensfn/tests/bench/benchkit"
	"github.com/lensfn/lensfn/wasm-modules/abi"
)

// BenchmarkReplayMemory is the memory a replay of a big trace needs: LENS_REPLAY_MEMORY_REQUESTS
// (default 1,000,000) Mooncake-sized records (14 hash ids, 2 ms apart), planned by the engine
// and replayed for 2 s against an endpoint that answers at once, so what is measured is the
// schedule, not requests in flight. "spool" is the trace replayer's way (records on disk,
// loaded when due); "slice" holds every request in memory, as the replayer did before. The
// peak Go heap (live and not yet swept) is sampled every 5 ms from the moment the records are
// written. With the spool it should not grow with the trace: what remains is the engine's
// bounded prompt cache (64 MiB) and the bodies it builds ahead, plus the collector's slack.
func BenchmarkReplayMemory(b *testing.B) {
	n := benchkit.EnvInt(b, "LENS_REPLAY_MEMORY_REQUESTS", 1_000_000)
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	}))
	defer srv.Close()
	cfg := loadgen.Config{BaseURL: srv.URL, Model: "m", API: loadgen.APIChat, Duration: 2 * time.Second, Seed: 1}

	for _, mode := range []string{"spool", "slice"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				runtime.GC()
				base := heapBytes()
				peak := startPeakSampler(5 * time.Millisecond)
				spool := spoolMooncakeLike(b, n)
				var sched loadgen.Schedule = tracereplayer.NewTraceSchedule(spool, "trace.jsonl", true) // the replayer's own conversion
				if mode == "slice" {
					all := make(loadgen.Requests, n)
					for i := range all {
						if err := sched.Load(i, &all[i]); err != nil {
							b.Fatal(err)
						}
					}
					sched = all
				}
				st, err := loadgen.RunSchedule(context.Background(), cfg, sched, loadgen.SinkFunc(func(loadgen.Record) error { return nil }))
				if err != nil {
					b.Fatal(err)
				}
				runtime.KeepAlive(sched)
				top := peak()
				_ = spool.Close()
				b.ReportMetric(float64(top-base)/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(st.Sent), "sent")
			}
		})
	}
}

func spoolMooncakeLike(b *testing.B, n int) *tracespool.Spool {
	w, err := tracespool.Create(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	hashes := make([]int64, 14)
	for i := 0; i < n; i++ {
		arrival := float64(i) * 2
		for k := range hashes {
			hashes[k] = int64(i*14 + k)
		}
		r := abi.TraceRequest{Line: int64(i + 1), ArrivalMs: &arrival, RecordedMs: arrival, InputTokens: 7000,
			OutputTokens: 300, HashIDs: hashes, BlockSize: 512, ContextMode: abi.ContextModeDeltas}
		if err := w.Append(&r); err != nil {
			b.Fatal(err)
		}
	}
	s, err := w.Finish()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// startPeakSampler samples the live heap until the returned func is called, which returns the
// highest sample.
func startPeakSampler(every time.Duration) func() uint64 {
	var top atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if h := heapBytes(); h > top.Load() {
				top.Store(h)
			}
			select {
			case <-t.C:
			case <-stop:
				return
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return top.Load()
	}
}
