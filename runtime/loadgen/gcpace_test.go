package loadgen_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// gcPercent is the process's GC percent now, read without changing it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// A run with GC headroom raises the process's GC percent while it lasts (the live heap of this
// test is a few MB, so 64 MiB of headroom is many times it), never lowers it below the GOGC in
// force, and restores it when the run ends.
func TestGCHeadroomRaisesTheGCPercentWhileARunLasts(t *testing.T) {
	for _, base := range []int{100, 50_000} {
		old := debug.SetGCPercent(base)
		fake := &fakeOpenAI{Tokens: 2}
		srv := fake.start(t)
		cfg := baseConfig(srv.URL)
		cfg.GCHeadroomBytes = 64 << 20
		var during []int
		sink := loadgen.SinkFunc(func(loadgen.Record) error { during = append(during, gcPercent()); return nil })
		schedule := []loadgen.Request{{ArrivalMs: f64(0), InputTokens: 4, OutputTokens: 2}, {ArrivalMs: f64(150), InputTokens: 4, OutputTokens: 2}}
		if _, err := loadgen.Run(context.Background(), cfg, schedule, sink); err != nil {
			t.Fatal(err)
		}
		after := gcPercent()
		debug.SetGCPercent(old)
		for _, p := range during {
			if base == 100 && p <= 200 || p < base {
				t.Errorf("GOGC %d: GC percent %d during the run, want well above 100 and never below %d", base, p, base)
			}
		}
		if after != base {
			t.Errorf("GOGC %d: GC percent %d after the run, want it restored", base, after)
		}
	}
	cfg := baseConfig("http://127.0.0.1:1")
	cfg.GCHeadroomBytes = -1
	if _, err := loadgen.Run(context.Background(), cfg, []loadgen.Request{{}}, loadgen.SinkFunc(func(loadgen.Record) error { return nil })); err == nil ||
		!strings.Contains(err.Error(), "GC headroom") {
		t.Fatalf("a negative headroom: %v, want an error naming it", err)
	}
}

// The headroom is what it is for: the same garbage costs fewer collections.
func TestGCHeadroomMeansFewerCollections(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 2}
	srv := fake.start(t)
	collections := func(headroom int64) uint32 {
		cfg := baseConfig(srv.URL)
		cfg.GCHeadroomBytes = headroom
		var garbage [][]byte
		var before runtime.MemStats
		var cycles uint32
		sink := loadgen.SinkFunc(func(r loadgen.Record) error {
			if r.RequestID == 1 {
				runtime.ReadMemStats(&before)
				for range 2048 { // 64 MiB of short-lived garbage, as a busy stage makes it
					garbage = append(garbage[:0], make([]byte, 32<<10))
				}
				var now runtime.MemStats
				runtime.ReadMemStats(&now)
				cycles = now.NumGC - before.NumGC
			}
			return nil
		})
		schedule := []loadgen.Request{{ArrivalMs: f64(0), InputTokens: 4, OutputTokens: 2}}
		if _, err := loadgen.Run(context.Background(), cfg, schedule, sink); err != nil {
			t.Fatal(err)
		}
		_ = garbage
		return cycles
	}
	without, with := collections(0), collections(256<<20)
	t.Logf("%d collections without headroom, %d with", without, with)
	if with*3 > without {
		t.Fatalf("%d collections with 256 MiB of headroom against %d without, want at most a third", with, without)
	}
}
