package inferencesim

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/metrics"
	"github.com/lensfn/lensfn/runtime/timingtest"
)

// streamTimes sends a streamed chat request and returns when each content
// chunk arrived, relative to the send.
func streamTimes(t *testing.T, url, body string) []time.Duration {
	t.Helper()
	start := time.Now()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var times []time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"delta":{"content"`) {
			times = append(times, time.Since(start))
		}
	}
	return times
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestStreamTimingFollowsModel: statistical check on medians. Deadlines are absolute, so the
// total must not drift by more than scheduling noise. The bounds are the model's; a window in
// which the host kept this process (client and simulator alike) off the CPU for longer than their
// 10 ms slack is measured again (timingtest.Retry): that delay, not the simulator, would have
// moved the medians (the median gap needs far more: half of its 203 gaps late by 0.5 ms).
func TestStreamTimingFollowsModel(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "20ms", "--inter-token-latency", "2ms")
	body := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":30,"ignore_eos":true,"stream":true}`
	timingtest.Retry(t, 3, 10*time.Millisecond, func() error {
		var ttfts, totals, gaps []time.Duration
		for i := 0; i < 7; i++ {
			times := streamTimes(t, ts.url(), body)
			if len(times) != 30 {
				t.Fatalf("%d tokens", len(times))
			}
			ttfts = append(ttfts, times[0])
			totals = append(totals, times[29])
			for j := 1; j < len(times); j++ {
				gaps = append(gaps, times[j]-times[j-1])
			}
		}
		model := 20*time.Millisecond + 29*2*time.Millisecond
		var errs []error
		if m := median(ttfts); m < 20*time.Millisecond || m > 30*time.Millisecond {
			errs = append(errs, fmt.Errorf("median TTFT %v, model 20ms", m))
		}
		if m := median(totals); m < model || m > model+10*time.Millisecond {
			errs = append(errs, fmt.Errorf("median total %v, model %v", m, model))
		}
		if m := median(gaps); m < 1500*time.Microsecond || m > 2500*time.Microsecond {
			errs = append(errs, fmt.Errorf("median gap %v, model 2ms", m))
		}
		return errors.Join(errs...)
	})
}

// TestSubMillisecondITL: a 500 us inter-token latency is honoured (the
// reference rounds it to 0).
func TestSubMillisecondITL(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "1ms", "--inter-token-latency", "500us")
	body := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":201,"ignore_eos":true,"stream":true}`
	var spans []time.Duration
	for i := 0; i < 5; i++ {
		times := streamTimes(t, ts.url(), body)
		spans = append(spans, times[200]-times[0]) // 200 gaps of 500 us = 100 ms
	}
	if m := median(spans); m < 95*time.Millisecond || m > 112*time.Millisecond {
		t.Fatalf("median span of 200 gaps %v, model 100ms", m)
	}
}

// TestNonStreamDelay: a non-streamed reply comes after the model's whole latency (15 ms + 10 x
// 1 ms), within 8 ms; a window in which the host kept this process off the CPU for longer than
// that slack is measured again (timingtest.Retry).
func TestNonStreamDelay(t *testing.T) {
	ts := startSim(t, "--time-to-first-token", "15ms", "--inter-token-latency", "1ms")
	body := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":11,"ignore_eos":true}`
	timingtest.Retry(t, 3, 8*time.Millisecond, func() error {
		var d []time.Duration
		for i := 0; i < 7; i++ {
			start := time.Now()
			post(t, ts.url()+"/v1/chat/completions", body)
			d = append(d, time.Since(start))
		}
		if m := median(d); m < 25*time.Millisecond || m > 33*time.Millisecond {
			return fmt.Errorf("median %v, model 25ms", m)
		}
		return nil
	})
}

// TestQueueing: with max-num-seqs 1 a second request waits for the
// first; with a full waiting queue the third gets 429.
func TestQueueing(t *testing.T) {
	ts := startSim(t, "--max-num-seqs", "1", "--max-waiting-queue-length", "1", "--time-to-first-token", "150ms")
	changes := watchScheduler(ts.sim)
	body := `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
	type res struct {
		status int
		took   time.Duration
	}
	out := make(chan res, 3)
	// Each request is sent once the one before it holds its place: running, then waiting.
	admittedOrQueued := []func(schedCounts) bool{
		func(c schedCounts) bool { return c.running == 1 },
		func(c schedCounts) bool { return c.waiting == 1 },
	}
	for i := 0; i < 3; i++ {
		go func() {
			start := time.Now()
			s, _, _ := post(t, ts.url()+"/v1/chat/completions", body)
			out <- res{s, time.Since(start)}
		}()
		if i < len(admittedOrQueued) {
			waitScheduler(t, changes, "request "+itoa(i+1)+" in place", admittedOrQueued[i])
		}
	}
	var statuses []int
	var slowest time.Duration
	for i := 0; i < 3; i++ {
		r := <-out
		statuses = append(statuses, r.status)
		slowest = max(slowest, r.took)
	}
	sort.Ints(statuses)
	if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 429 {
		t.Fatalf("statuses %v", statuses)
	}
	if slowest < 240*time.Millisecond {
		t.Fatalf("queued request finished after %v, should have waited for the first", slowest)
	}
	_, m := get(t, ts.url()+"/metrics")
	if !strings.Contains(m, "vllm:request_queue_time_seconds_count{model_name=\"fake-model\"} 1") {
		t.Fatalf("queue time not recorded:\n%s", exposedLines(m, metrics.NameQueue+"_count"))
	}
}

// TestLateFirstTokenKeepsTheGaps: when the first token leaves late (here the server stalls
// 150 ms once before it, as under CPU contention), the following tokens keep the configured
// inter-token latency from the first token actually sent instead of being already due and
// arriving in one burst; the lateness stays in the TTFT. Seen through HTTP streaming.
func TestLateFirstTokenKeepsTheGaps(t *testing.T) {
	const stall, itl, tokens = 150 * time.Millisecond, 20 * time.Millisecond, 6
	var once sync.Once
	late := func(s *Simulator) { s.beforeEmit = func() { once.Do(func() { time.Sleep(stall) }) } }
	ts := startSimWith(t, config.Environment{}, []Option{late}, "--time-to-first-token", "10ms", "--inter-token-latency", itl.String())
	times := streamTimes(t, ts.url(), `{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":6,"ignore_eos":true,"stream":true}`)
	if len(times) != tokens {
		t.Fatalf("%d tokens, want %d", len(times), tokens)
	}
	if times[0] < stall {
		t.Fatalf("TTFT %v: the server's lateness (%v) must stay in the TTFT", times[0], stall)
	}
	var gaps []time.Duration
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i]-times[i-1])
	}
	// The server cannot send a token before its deadline (first token + the gaps so far),
	// so the span is a lower bound that load cannot break; 5 ms allows for the client
	// reading the first chunk late.
	if span := times[tokens-1] - times[0]; span < (tokens-1)*itl-5*time.Millisecond {
		t.Fatalf("tokens 2-%d arrived %v after the first (gaps %v), want about %v: a burst", tokens, span, gaps, (tokens-1)*itl)
	}
	if m := median(gaps); m < itl*3/4 {
		t.Fatalf("median inter-token gap %v (gaps %v), want about %v", m, gaps, itl)
	}
}
