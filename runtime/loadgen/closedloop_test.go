package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

func TestClosedLoopKeepsExactlyConcurrencyInFlight(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 15 * time.Millisecond, ITL: 2 * time.Millisecond, Tokens: 4}
	var inFlight, peak, atPeak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 4 {
			atPeak.Add(1)
		}
		defer inFlight.Add(-1)
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := baseConfig(srv.URL)
	cfg.Concurrency = 4
	schedule := make([]loadgen.Request, 30)
	for i := range schedule {
		// Arrivals far in the future are ignored by a closed loop.
		schedule[i] = loadgen.Request{ArrivalMs: f64(float64(i) * 60_000), InputTokens: 8, OutputTokens: 4}
	}
	started := time.Now()
	recs, st := run(t, cfg, schedule)
	if len(recs) != 30 || st.Successful != 30 || st.NotSent != 0 {
		t.Fatalf("stats %+v", st)
	}
	if peak.Load() != 4 {
		t.Fatalf("peak in flight %d, want exactly 4", peak.Load())
	}
	if atPeak.Load() < 7 { // every round of four completions refills all four slots
		t.Fatalf("only %d requests arrived with 4 in flight: the loop did not refill its slots", atPeak.Load())
	}
	if time.Since(started) > 10*time.Second {
		t.Fatal("the closed loop waited for arrivals")
	}
	for _, r := range recs {
		if drift := r.StartedAtSeconds - r.ScheduledAtSeconds; drift < 0 || drift > 0.5 {
			t.Fatalf("request %d drift %.3f s", r.RequestID, drift)
		}
	}
}

func TestClosedLoopRefusesSessions(t *testing.T) {
	cfg := baseConfig("http://127.0.0.1:1")
	cfg.Concurrency = 2
	_, err := loadgen.Run(context.Background(), cfg, []loadgen.Request{{SessionID: "s", Turn: 0}, {SessionID: "s", Turn: 1}}, &memSink{})
	if err == nil || !strings.Contains(err.Error(), "closed-loop") {
		t.Fatalf("err = %v", err)
	}
}

func TestClosedLoopStopsOnCancel(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 50 * time.Millisecond, Tokens: 2}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL)
	cfg.Concurrency = 2
	schedule := make([]loadgen.Request, 1000)
	for i := range schedule {
		schedule[i] = loadgen.Request{InputTokens: 4, OutputTokens: 2}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()
	st, err := loadgen.Run(ctx, cfg, schedule, &memSink{})
	if err == nil || time.Since(started) > 2*time.Second || st.NotSent < 900 {
		t.Fatalf("err %v after %s, stats %+v", err, time.Since(started), st)
	}
}
