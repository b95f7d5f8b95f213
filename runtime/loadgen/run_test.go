package loadgen_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/timingtest"
)

type memSink struct {
	mu      sync.Mutex
	records []loadgen.Record
}

func (m *memSink) Record(r loadgen.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, r)
	return nil
}

// byID returns the records sorted by request id.
func (m *memSink) byID() []loadgen.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]loadgen.Record(nil), m.records...)
	sort.Slice(out, func(a, b int) bool { return out[a].RequestID < out[b].RequestID })
	return out
}

func f64(v float64) *float64 { return &v }

func baseConfig(url string) loadgen.Config {
	return loadgen.Config{BaseURL: url, Model: "m", API: loadgen.APIChat, Stream: true, Seed: 7}
}

func run(t *testing.T, cfg loadgen.Config, schedule []loadgen.Request) ([]loadgen.Record, loadgen.Stats) {
	t.Helper()
	sink := &memSink{}
	st, err := loadgen.Run(context.Background(), cfg, schedule, sink)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	recs := sink.byID()
	if int64(len(recs)) != st.Sent {
		t.Fatalf("%d records for %d sent requests", len(recs), st.Sent)
	}
	return recs, st
}

func TestStreamingTimingMatchesTheServersDelays(t *testing.T) {
	for _, api := range []loadgen.API{loadgen.APIChat, loadgen.APICompletions} {
		t.Run(string(api), func(t *testing.T) {
			fake := &fakeOpenAI{TTFT: 60 * time.Millisecond, ITL: 15 * time.Millisecond, Tokens: 8}
			srv := fake.start(t)
			cfg := baseConfig(srv.URL)
			cfg.API = api
			recs, st := run(t, cfg, []loadgen.Request{{ArrivalMs: f64(0), InputTokens: 20, OutputTokens: 8}})
			if st.Successful != 1 || len(recs) != 1 {
				t.Fatalf("stats %+v, records %+v", st, recs)
			}
			r := recs[0]
			if !r.Successful || r.Error != nil || r.StatusCode == nil || *r.StatusCode != 200 {
				t.Fatalf("record not successful: %+v", r)
			}
			if r.TTFTMs == nil || *r.TTFTMs < 60 || *r.TTFTMs > 60+80 {
				t.Errorf("ttft %v ms, want about 60", deref(r.TTFTMs))
			}
			if r.TPOTMs == nil || *r.TPOTMs < 14 || *r.TPOTMs > 15+25 {
				t.Errorf("tpot %v ms, want about 15", deref(r.TPOTMs))
			}
			if r.LatencyMs < 60+7*15 {
				t.Errorf("latency %v ms shorter than ttft + 7 gaps", r.LatencyMs)
			}
			if r.OutputTokens != 8 || r.InputTokens != 20 {
				t.Errorf("tokens in/out %v/%v, want 20/8 from usage", r.InputTokens, r.OutputTokens)
			}
			if r.FirstTokenAtSeconds == nil || *r.FirstTokenAtSeconds < r.StartedAtSeconds || r.CompletedAtSeconds < *r.FirstTokenAtSeconds {
				t.Errorf("times out of order: %+v", r)
			}
			if r.Metadata["output_tokens_source"] != "usage" {
				t.Errorf("metadata %v", r.Metadata)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestCountsChunksWhenTheServerSendsNoUsage(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 5, ITL: 2 * time.Millisecond, NoUsage: true}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL)
	cfg.InterTokenTimes = true
	recs, _ := run(t, cfg, []loadgen.Request{{InputTokens: 3, OutputTokens: 5}})
	r := recs[0]
	if r.OutputTokens != 5 || r.InputTokens != 3 || r.Metadata["output_tokens_source"] != "chunks" {
		t.Fatalf("tokens %v/%v metadata %v", r.InputTokens, r.OutputTokens, r.Metadata)
	}
	if gaps, _ := r.Metadata["inter_token_ms"].([]float64); len(gaps) != 4 {
		t.Fatalf("inter-token gaps %v, want 4", r.Metadata["inter_token_ms"])
	}
}

// Two schedules sent back to back with one Origin keep their records on one clock: the second's
// times continue after the first's, and its schedule offsets are shifted with them.
func TestOriginPutsBackToBackRunsOnOneClock(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 10 * time.Millisecond, Tokens: 2}
	cfg := baseConfig(fake.start(t).URL)
	cfg.Origin = time.Now()
	first, _ := run(t, cfg, []loadgen.Request{{InputTokens: 2, OutputTokens: 2}})
	second, _ := run(t, cfg, []loadgen.Request{{InputTokens: 2, OutputTokens: 2}})
	a, b := first[0], second[0]
	if b.StartedAtSeconds < a.CompletedAtSeconds || b.ScheduledAtSeconds < a.CompletedAtSeconds ||
		*b.FirstTokenAtSeconds < b.StartedAtSeconds || b.StartedAtSeconds-b.ScheduledAtSeconds > 0.05 {
		t.Fatalf("first %+v\nsecond %+v", a, b)
	}
}

func TestNonStreamingRecordsLatencyWithoutTokenTimes(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 30 * time.Millisecond, Tokens: 3}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL)
	cfg.Stream = false
	recs, _ := run(t, cfg, []loadgen.Request{{InputTokens: 4, OutputTokens: 3}})
	r := recs[0]
	if !r.Successful || r.TTFTMs != nil || r.TPOTMs != nil || r.FirstTokenAtSeconds != nil {
		t.Fatalf("record %+v", r)
	}
	if r.LatencyMs < 30 || r.OutputTokens != 3 {
		t.Fatalf("latency %v, output %v", r.LatencyMs, r.OutputTokens)
	}
	if body := fake.requests()[0].Body; body["stream"] != false || body["stream_options"] != nil {
		t.Fatalf("non-stream body %v", body)
	}
}

func TestRequestBodiesAndHeaders(t *testing.T) {
	fake := &fakeOpenAI{}
	srv := fake.start(t)
	prompt := "literal prompt"
	cfg := baseConfig(srv.URL + "/v1/")
	cfg.APIKey = "sk-secret-key"
	cfg.IgnoreEOS = true
	cfg.ExtraBody = json.RawMessage(`{"temperature":0,"top_p":0.5}`)
	cfg.RunID = "run1"
	schedule := []loadgen.Request{
		{SessionID: "s1", Turn: 0, InputTokens: 10, OutputTokens: 6, Extra: json.RawMessage(`{"top_p":0.9}`),
			Metadata: map[string]any{"line": 3}},
		{Prompt: &prompt, OutputTokens: 2},
		{Messages: json.RawMessage(`[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]`),
			Tools: json.RawMessage(`[{"type":"function","function":{"name":"f"}}]`)},
		{Payload: json.RawMessage(`{"messages":[{"role":"user","content":"from payload"}],"n":1,"model":"other"}`)},
	}
	recs, _ := run(t, cfg, schedule)

	first, ok := fake.byRequestID("run1-1")
	if !ok {
		t.Fatal("no request with X-Request-ID run1-1")
	}
	if first.Path != "/v1/chat/completions" {
		t.Errorf("path %q", first.Path)
	}
	if got := first.Header.Get("Authorization"); got != "Bearer sk-secret-key" {
		t.Errorf("authorization %q", got)
	}
	if got := first.Header.Get("X-Session-ID"); got != "s1" {
		t.Errorf("session header %q", got)
	}
	b := first.Body
	for key, want := range map[string]any{"model": "m", "max_tokens": 6.0, "max_completion_tokens": 6.0,
		"ignore_eos": true, "min_tokens": 6.0, "stream": true, "temperature": 0.0, "top_p": 0.9} {
		if b[key] != want {
			t.Errorf("body[%s] = %v, want %v", key, b[key], want)
		}
	}
	if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v", b["stream_options"])
	}
	msgs := b["messages"].([]any)
	content := msgs[0].(map[string]any)["content"].(string)
	if n := len(strings.Fields(content)); n != 10 {
		t.Errorf("synthesised prompt has %d words, want 10", n)
	}

	second, _ := fake.byRequestID("run1-2")
	if c := second.Body["messages"].([]any)[0].(map[string]any)["content"]; c != prompt {
		t.Errorf("literal prompt sent as %v", c)
	}
	if second.Header.Get("X-Session-ID") != "" {
		t.Errorf("a sessionless request sent X-Session-ID")
	}
	third, _ := fake.byRequestID("run1-3")
	if msgs := third.Body["messages"].([]any); len(msgs) != 2 || third.Body["tools"] == nil {
		t.Errorf("literal messages/tools not sent verbatim: %v", third.Body)
	}
	if _, has := third.Body["max_tokens"]; has {
		t.Errorf("max_tokens sent without an output length: %v", third.Body)
	}
	fourth, _ := fake.byRequestID("run1-4")
	if fourth.Body["n"] != 1.0 || fourth.Body["model"] != "m" || fourth.Body["stream"] != true {
		t.Errorf("payload body %v", fourth.Body)
	}

	raw, _ := json.Marshal(recs)
	if strings.Contains(string(raw), "sk-secret-key") {
		t.Error("the API key leaked into a record")
	}
	if !strings.Contains(cfg.String(), "APIKey:set") || strings.Contains(cfg.String(), "sk-secret") {
		t.Errorf("Config.String: %s", cfg.String())
	}
	if recs[0].Metadata["line"] != 3 || recs[0].SessionID != "s1" {
		t.Errorf("metadata/session not carried: %+v", recs[0])
	}

	// completions sends prompt and max_tokens only.
	cfg.API = loadgen.APICompletions
	cfg.IgnoreEOS = false
	cfg.ExtraBody = nil
	fake2 := &fakeOpenAI{}
	cfg.BaseURL = fake2.start(t).URL
	run(t, cfg, []loadgen.Request{{InputTokens: 5, OutputTokens: 4}})
	c := fake2.requests()[0]
	if c.Path != "/v1/completions" || c.Body["max_tokens"] != 4.0 || c.Body["prompt"] == nil {
		t.Errorf("completions request %s %v", c.Path, c.Body)
	}
	for _, k := range []string{"max_completion_tokens", "ignore_eos", "min_tokens", "messages"} {
		if _, has := c.Body[k]; has {
			t.Errorf("completions body has %s", k)
		}
	}
}

func TestScheduleFollowsTheAbsoluteClock(t *testing.T) {
	if raceDetector {
		t.Skip("timing under the race detector measures the detector")
	}
	fake := &fakeOpenAI{Tokens: 1}
	srv := fake.start(t)
	const n, gapMs = 300, 4.0
	schedule := make([]loadgen.Request, n)
	for i := range schedule {
		schedule[i] = loadgen.Request{ArrivalMs: f64(float64(i) * gapMs), OutputTokens: 1}
	}
	// The bounds are on the engine's lateness; a run in which the host kept this process (the
	// engine and the fake endpoint) off the CPU for longer than the median's 10 ms slack is
	// measured again rather than blamed on the engine (timingtest.Retry).
	timingtest.Retry(t, 3, 10*time.Millisecond, func() error {
		recs, st := run(t, baseConfig(srv.URL), schedule)
		if st.Successful != n {
			t.Fatalf("stats %+v", st)
		}
		drift := make([]float64, n)
		for i, r := range recs {
			if math.Abs(r.ScheduledAtSeconds-float64(i)*gapMs/1000) > 1e-9 {
				t.Fatalf("request %d scheduled at %v", r.RequestID, r.ScheduledAtSeconds)
			}
			drift[i] = (r.StartedAtSeconds - r.ScheduledAtSeconds) * 1000
			if drift[i] < -0.05 {
				t.Fatalf("request %d sent %.3f ms early", r.RequestID, -drift[i])
			}
		}
		// Absolute scheduling: lateness does not add up. Sleeping each 4 ms gap instead would
		// overshoot ~1 ms per sleep on Linux, so the last tenth of the run would be ~250 ms later
		// than the first. Medians keep the check robust to the stalls of a busy shared machine.
		var errs []error
		first, last := median(drift[:n/10]), median(drift[n-n/10:])
		if last-first > 20 {
			errs = append(errs, fmt.Errorf("median drift grew from %.2f ms to %.2f ms over the run: drift accumulates", first, last))
		}
		sort.Float64s(drift)
		if p50 := drift[n/2-1]; p50 > 10 {
			errs = append(errs, fmt.Errorf("median drift %.2f ms", p50))
		}
		if p99 := drift[int(math.Ceil(n*0.99))-1]; p99 > 250 {
			errs = append(errs, fmt.Errorf("p99 drift %.2f ms", p99))
		}
		return errors.Join(errs...)
	})
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[(len(s)-1)/2]
}

func TestSessionTurnsWaitForThePreviousTurn(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 200 * time.Millisecond, Tokens: 1}
	srv := fake.start(t)
	// Listed out of order on purpose: turns follow Turn, not the slice.
	schedule := []loadgen.Request{
		{SessionID: "a", Turn: 2, DelayMs: f64(50)},     // previous done + 50 ms
		{SessionID: "a", Turn: 0, ArrivalMs: f64(0)},    // at 0
		{SessionID: "a", Turn: 1, ArrivalMs: f64(10)},   // recorded 10 ms, but turn 0 takes 200
		{SessionID: "a", Turn: 3, ArrivalMs: f64(1000)}, // recorded later than turn 2's end
		{SessionID: "b", Turn: 0, ArrivalMs: f64(20)},   // independent session
		{SessionID: "a", Turn: 4},                       // neither: right after turn 3
	}
	recs, st := run(t, baseConfig(srv.URL), schedule)
	if st.Successful != 6 {
		t.Fatalf("stats %+v", st)
	}
	byTurn := map[string]loadgen.Record{}
	for _, r := range recs {
		byTurn[r.SessionID+string(rune('0'+r.Turn))] = r
	}
	a0, a1, a2, a3, a4, b0 := byTurn["a0"], byTurn["a1"], byTurn["a2"], byTurn["a3"], byTurn["a4"], byTurn["b0"]
	const slack = 0.0001
	if a1.ScheduledAtSeconds+slack < a0.CompletedAtSeconds || a1.StartedAtSeconds+slack < a0.CompletedAtSeconds {
		t.Errorf("turn 1 released at %.4f before turn 0 completed at %.4f", a1.ScheduledAtSeconds, a0.CompletedAtSeconds)
	}
	if a1.Metadata["recorded_at_seconds"] != 0.01 {
		t.Errorf("turn 1 recorded arrival not kept: %v", a1.Metadata)
	}
	if got := a2.ScheduledAtSeconds - a1.CompletedAtSeconds; math.Abs(got-0.05) > 0.001 {
		t.Errorf("turn 2 released %.4f s after turn 1 completed, want 0.050", got)
	}
	if a3.ScheduledAtSeconds != 1.0 || a3.StartedAtSeconds < 1.0 {
		t.Errorf("turn 3 released at %.4f, want its recorded 1.0", a3.ScheduledAtSeconds)
	}
	if math.Abs(a4.ScheduledAtSeconds-a3.CompletedAtSeconds) > 0.001 {
		t.Errorf("turn 4 released at %.4f, turn 3 completed at %.4f", a4.ScheduledAtSeconds, a3.CompletedAtSeconds)
	}
	if b0.StartedAtSeconds > 0.15 { // waiting for a's turn 0 would mean >= 0.2

		t.Errorf("session b waited for session a: started %.4f", b0.StartedAtSeconds)
	}
	if a0.RequestID != 2 || a2.RequestID != 1 {
		t.Errorf("request ids must follow the schedule's order: %d %d", a0.RequestID, a2.RequestID)
	}
}

func TestFailuresAreRecorded(t *testing.T) {
	tests := []struct {
		name       string
		fake       *fakeOpenAI
		timeout    time.Duration
		wantStatus int // 0: no status
		wantErr    string
	}{
		{"rate limited", &fakeOpenAI{Status: 429}, 0, 429, "HTTP 429: injected failure 429"},
		{"server error", &fakeOpenAI{Status: 503}, 0, 503, "HTTP 503"},
		{"stream broken mid-way", &fakeOpenAI{Tokens: 5, AbortAfter: 2}, 0, 200, "transport"},
		{"stream without an end", &fakeOpenAI{Tokens: 2, NoDone: true}, 0, 200, "stream ended before [DONE]"},
		{"request timeout", &fakeOpenAI{TTFT: 2 * time.Second}, 100 * time.Millisecond, 200, "timeout: no complete response within 100ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.fake.start(t)
			cfg := baseConfig(srv.URL)
			cfg.RequestTimeout = tt.timeout
			began := time.Now()
			recs, st := run(t, cfg, []loadgen.Request{{OutputTokens: 3}})
			if tt.timeout > 0 && time.Since(began) > time.Second {
				t.Errorf("timeout honoured after %s", time.Since(began))
			}
			r := recs[0]
			if r.Successful || st.Failed != 1 {
				t.Fatalf("want a failed record, got %+v", r)
			}
			if (tt.wantStatus == 0) != (r.StatusCode == nil) || (r.StatusCode != nil && *r.StatusCode != tt.wantStatus) {
				t.Errorf("status %v, want %d", r.StatusCode, tt.wantStatus)
			}
			if r.Error == nil || !strings.Contains(*r.Error, tt.wantErr) {
				t.Errorf("error %v, want it to contain %q", r.Error, tt.wantErr)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		srv := (&fakeOpenAI{}).start(t)
		url := srv.URL
		srv.Close()
		recs, _ := run(t, baseConfig(url), []loadgen.Request{{OutputTokens: 1}})
		if r := recs[0]; r.Successful || r.StatusCode != nil || r.Error == nil || !strings.HasPrefix(*r.Error, "transport:") {
			t.Errorf("record %+v", r)
		}
	})
}

func TestRunEndsAtDurationPlusGrace(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 5 * time.Second}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL)
	cfg.Duration = 150 * time.Millisecond
	cfg.GracePeriod = 100 * time.Millisecond
	progress := &loadgen.Progress{}
	cfg.Progress = progress
	schedule := []loadgen.Request{
		{ArrivalMs: f64(0)}, {ArrivalMs: f64(100)},
		{ArrivalMs: f64(400)}, // after the duration: never sent
	}
	began := time.Now()
	recs, st := run(t, cfg, schedule)
	if took := time.Since(began); took > 900*time.Millisecond {
		t.Errorf("run took %s, want about 250 ms", took)
	}
	if st.Sent != 2 || st.NotSent != 1 || st.Failed != 2 || len(recs) != 2 {
		t.Fatalf("stats %+v, %d records", st, len(recs))
	}
	for _, r := range recs {
		if r.Error == nil || !strings.Contains(*r.Error, "the run ended") {
			t.Errorf("request %d error %v", r.RequestID, r.Error)
		}
	}
	if s := progress.Snapshot(); s.InFlight != 0 || s.NotSent != 1 || s.Completed != 2 || s.Scheduled != 3 {
		t.Errorf("progress %+v", s)
	}
}

// runAndStop runs schedule and cancels it after 150 ms; the run must end within a second of
// that with context.Canceled.
func runAndStop(t *testing.T, cfg loadgen.Config, schedule []loadgen.Request) (loadgen.Stats, *memSink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel)
	sink := &memSink{}
	began := time.Now()
	st, err := loadgen.Run(ctx, cfg, schedule, sink)
	if took := time.Since(began); took > time.Second {
		t.Errorf("stop honoured after %s", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	return st, sink
}

func TestCancellationStopsTheRunPromptly(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 10 * time.Second}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL)
	schedule := []loadgen.Request{{ArrivalMs: f64(0)}, {ArrivalMs: f64(10)}, {ArrivalMs: f64(60_000)}}
	st, sink := runAndStop(t, cfg, schedule)
	recs := sink.byID()
	if st.Sent != 2 || st.NotSent != 1 || len(recs) != 2 {
		t.Fatalf("stats %+v, %d records", st, len(recs))
	}
	for _, r := range recs {
		if r.Successful || r.Error == nil || !strings.Contains(*r.Error, "stopped") {
			t.Errorf("record %+v", r)
		}
	}
}

func TestConnectionsAreReused(t *testing.T) {
	for _, stream := range []bool{true, false} {
		fake := &fakeOpenAI{Tokens: 3}
		cfg := baseConfig(fake.start(t).URL)
		cfg.Stream = stream
		// One session's turns never overlap, so one kept-alive connection can serve them all;
		// without reuse every turn dials its own.
		schedule := make([]loadgen.Request, 30)
		for i := range schedule {
			schedule[i] = loadgen.Request{SessionID: "s", Turn: i, DelayMs: f64(2), OutputTokens: 3}
		}
		run(t, cfg, schedule)
		if n := fake.connections.Load(); n > 5 {
			t.Errorf("stream %t: 30 sequential requests opened %d connections; finished responses must return theirs to the pool", stream, n)
		}
	}
}

func TestNoGoroutinesOutliveTheRun(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 2, ITL: time.Millisecond}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL) // the engine's own client: its idle connections must go too
	before := runtime.NumGoroutine()
	schedule := make([]loadgen.Request, 200)
	for i := range schedule {
		schedule[i] = loadgen.Request{ArrivalMs: f64(float64(i % 20)), SessionID: string(rune('a' + i%7)), Turn: i}
	}
	run(t, cfg, schedule)
	expectGoroutinesBackTo(t, before)
}

// expectGoroutinesBackTo waits up to 2 s for the goroutine count to fall back to before (with
// room for the runtime's own two) and fails the test if it does not.
func expectGoroutinesBackTo(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
}

func TestProgressIsReadableWhileRunning(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 2, ITL: time.Millisecond}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL)
	cfg.Progress = &loadgen.Progress{}
	schedule := make([]loadgen.Request, 100)
	for i := range schedule {
		schedule[i] = loadgen.Request{ArrivalMs: f64(float64(i))}
	}
	stop := make(chan struct{})
	var readerDone sync.WaitGroup
	readerDone.Add(1)
	go func() {
		defer readerDone.Done()
		for {
			s := cfg.Progress.Snapshot()
			if s.InFlight < 0 || s.Completed != s.Successful+s.Failed || s.Sent > s.Scheduled {
				t.Errorf("inconsistent snapshot %+v", s)
			}
			select {
			case <-stop:
				return
			default:
				time.Sleep(time.Millisecond)
			}
		}
	}()
	_, st := run(t, cfg, schedule)
	close(stop)
	readerDone.Wait()
	if s := cfg.Progress.Snapshot(); s.Sent != 100 || s.Completed != 100 || s.Successful != st.Successful || s.OutputTokens != 200 {
		t.Errorf("final progress %+v", s)
	}
}

func TestBadInputIsRejectedBeforeSending(t *testing.T) {
	fake := &fakeOpenAI{}
	url := fake.start(t).URL
	good := baseConfig(url)
	tests := []struct {
		name     string
		cfg      func(c *loadgen.Config)
		schedule []loadgen.Request
		want     string
	}{
		{"no base url", func(c *loadgen.Config) { c.BaseURL = "" }, nil, "base URL is required"},
		{"relative url", func(c *loadgen.Config) { c.BaseURL = "localhost:80" }, nil, "absolute http(s) URL"},
		{"no model", func(c *loadgen.Config) { c.Model = "" }, nil, "model is required"},
		{"unknown api", func(c *loadgen.Config) { c.API = "embeddings" }, nil, "api must be"},
		{"extra body not an object", func(c *loadgen.Config) { c.ExtraBody = json.RawMessage(`[1]`) }, nil, "extra body"},
		{"negative arrival", nil, []loadgen.Request{{ArrivalMs: f64(-1)}}, "request 1: arrival_ms"},
		{"NaN delay", nil, []loadgen.Request{{}, {DelayMs: f64(math.NaN())}}, "request 2: delay_ms"},
		{"arrival and delay", nil, []loadgen.Request{{ArrivalMs: f64(1), DelayMs: f64(1)}}, "both an arrival and a delay"},
		{"duplicate turn", nil, []loadgen.Request{{SessionID: "s"}, {SessionID: "s"}}, `session "s" has turn 0 twice`},
		{"hash ids without block size", nil, []loadgen.Request{{HashIDs: []int64{1}}}, "block size"},
		{"messages to completions", func(c *loadgen.Config) { c.API = loadgen.APICompletions },
			[]loadgen.Request{{Messages: json.RawMessage(`[]`)}}, "chat messages cannot be sent"},
		{"messages not an array", nil, []loadgen.Request{{Messages: json.RawMessage(`{"role":"user"}`)}}, "must be a JSON array"},
		{"extra not JSON", nil, []loadgen.Request{{Extra: json.RawMessage(`{x`)}}, "request 1: extra: not valid JSON"},
		{"negative tokens", nil, []loadgen.Request{{OutputTokens: -1}}, "token counts"},
		{"system prompt longer than the prompt", nil, []loadgen.Request{{InputTokens: 4, SystemPromptTokens: 5}}, "request 1: system prompt tokens"},
		{"negative system prompt", nil, []loadgen.Request{{InputTokens: 4, SystemPromptTokens: -1}}, "system prompt tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, err := loadgen.Run(context.Background(), cfg, tt.schedule, &memSink{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("%d requests sent despite bad input", n)
	}
}

func TestSinkErrorStopsTheRun(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 1}
	srv := fake.start(t)
	boom := errors.New("disk full")
	schedule := []loadgen.Request{{ArrivalMs: f64(0)}, {ArrivalMs: f64(5_000)}}
	began := time.Now()
	st, err := loadgen.Run(context.Background(), baseConfig(srv.URL), schedule, loadgen.SinkFunc(func(loadgen.Record) error { return boom }))
	if !errors.Is(err, boom) || time.Since(began) > 2*time.Second || st.Sent != 1 {
		t.Fatalf("err %v after %s, stats %+v", err, time.Since(began), st)
	}
}
