package inferencesim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestInFlightMemoryBudget: the bodies of the requests being served count against
// --max-inflight-request-mb. One that does not fit beside those in flight gets an OpenAI-style
// 503 naming the budget, whatever the concurrency; once they finish the budget is whole again,
// for streamed and whole answers alike.
func TestInFlightMemoryBudget(t *testing.T) {
	ts := startSim(t, "--max-request-body-size-mb", "1", "--max-inflight-request-mb", "6", "--max-num-seqs", "8",
		"--max-model-len", "200000", "--time-to-first-token", "400ms")
	changes := watchScheduler(ts.sim)
	// About 600 KiB each, counted 6 times: one fits in 6 MiB, two do not.
	prompt := strings.Repeat(" word", 120_000)
	body := func(stream bool) string {
		raw, _ := json.Marshal(map[string]any{"model": "fake-model", "prompt": prompt, "max_tokens": 2, "stream": stream})
		return string(raw)
	}
	for _, stream := range []bool{true, false} {
		first := make(chan int, 1)
		go func() {
			resp, err := http.Post(ts.url()+"/v1/completions", "application/json", strings.NewReader(body(stream)))
			if err != nil {
				first <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			first <- resp.StatusCode
		}()
		waitScheduler(t, changes, "the first request running", func(c schedCounts) bool { return c.running == 1 })
		status, _, answer := post(t, ts.url()+"/v1/completions", body(stream))
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(answer), &e); err != nil || status != 503 || e.Error.Code != 503 ||
			!strings.Contains(e.Error.Message, "in-flight memory budget is 6 MiB (--max-inflight-request-mb)") {
			t.Fatalf("stream=%v: a second request beside the first got %d %s", stream, status, answer)
		}
		if got := <-first; got != 200 {
			t.Fatalf("stream=%v: the first request got %d", stream, got)
		}
		waitScheduler(t, changes, "the first request ended", func(c schedCounts) bool { return c.running == 0 })
		if held := ts.sim.inFlight.Held(); held != 0 {
			t.Fatalf("stream=%v: %d bytes still held after every request ended", stream, held)
		}
	}
	// A request refused before it ran (bad JSON) holds nothing afterwards either.
	if status, _, _ := post(t, ts.url()+"/v1/completions", `{"model":`); status != 400 || ts.sim.inFlight.Held() != 0 {
		t.Fatalf("a malformed request: %d, %d bytes held", status, ts.sim.inFlight.Held())
	}
	if status, _, _ := post(t, ts.url()+"/v1/completions", body(false)); status != 200 {
		t.Fatalf("after the others ended the budget is not whole: %d", status)
	}
}

// TestInFlightBudgetFlag: the budget holds at least the largest body (counted 6 times), so
// every request one may send can run alone.
func TestInFlightBudgetFlag(t *testing.T) {
	for _, args := range [][]string{{"--max-request-body-size-mb", "8", "--max-inflight-request-mb", "47"}, {"--max-inflight-request-mb", "65537"}} {
		if _, err := ParseConfig(append(args, "--model", "m"), Environment{}, nil); err == nil || !strings.Contains(err.Error(), "--max-inflight-request-mb") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
