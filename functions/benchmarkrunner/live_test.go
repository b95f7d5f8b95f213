package benchmarkrunner_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/livesummary"
)

// liveOf reads a running run's live_metrics: its counts and its summary.
func liveOf(r *evalrun.Run) (completed int64, summary *livesummary.Snapshot) {
	if r.LiveMetrics == nil {
		return 0, nil
	}
	return r.LiveMetrics.CompletedRequests, r.LiveMetrics.Summary
}

// While a run sends, live_metrics carries the summary of the requests so far: the fake model's
// 30 ms to first token and 5 ms per token come back as the percentiles (within the sketch's 1%
// and what a loaded host adds), with a throughput and no errors.
func TestLiveMetricsCarryTheSummaryMidRun(t *testing.T) {
	h := start(t, &fakeModel{ttft: 30 * time.Millisecond, itl: 5 * time.Millisecond}, fast())
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":6}],"warmup_requests":0,
		"concurrency_stages":[{"concurrency":2,"num_requests":100000}]}`)
	run := h.waitFor(t, id, 20*time.Second, func(r *evalrun.Run) bool {
		_, s := liveOf(r)
		return r.Status == evalrun.StatusRunning && s != nil && s.Requests >= 10
	})
	_, s := liveOf(run)
	h.cancel(t, id)
	if s.TTFTMs.P50 == nil || *s.TTFTMs.P50 < 29.7 || *s.TTFTMs.P50 > 1000 || s.TTFTMs.P90 == nil || *s.TTFTMs.P99 < *s.TTFTMs.P50 {
		t.Errorf("ttft %+v, want about 30 ms", s.TTFTMs)
	}
	if s.TPOTMs.P50 == nil || *s.TPOTMs.P50 < 4.95 || *s.TPOTMs.P50 > 500 || s.TPOTMs.P99 == nil {
		t.Errorf("tpot %+v, want about 5 ms", s.TPOTMs)
	}
	// 30 ms + 5 x 5 ms at least.
	if s.LatencyMs.P50 == nil || *s.LatencyMs.P50 < 54 || s.LatencyMs.P99 == nil {
		t.Errorf("e2e latency %+v, want at least 55 ms", s.LatencyMs)
	}
	tp := s.Throughput
	if tp.RequestsPerSecond <= 0 || tp.OverallRequestsPerSecond <= 0 || tp.OutputTokensPerSecond <= 0 || tp.OverallOutputTokensPerSec <= 0 {
		t.Errorf("throughput %+v", tp)
	}
	if s.ErrorRate != 0 || len(s.TopErrors) != 0 || s.RelativeAccuracy != livesummary.RelativeAccuracy {
		t.Errorf("errors %v %v, accuracy %v", s.ErrorRate, s.TopErrors, s.RelativeAccuracy)
	}
	h.waitFor(t, id, 10*time.Second, terminal)
}

// A failing endpoint's requests show as the error rate and the top cause.
func TestLiveMetricsNameTheTopErrorCause(t *testing.T) {
	h := start(t, &fakeModel{failWith: http.StatusServiceUnavailable}, fast())
	// The endpoint answers /v1/models and /metrics (so the run starts) but 503s every completion.
	id := h.create(t, `{"deployment_execution_id":"exec-1","matrix":[{"isl":8,"osl":4}],"warmup_requests":0,
		"concurrency_stages":[{"concurrency":2,"num_requests":100000}]}`)
	run := h.waitFor(t, id, 20*time.Second, func(r *evalrun.Run) bool {
		_, s := liveOf(r)
		return terminal(r) || s != nil && s.Requests >= 5
	})
	if terminal(run) {
		t.Fatalf("the run ended before its live metrics showed (%s: %s)", run.Status, run.ErrorText())
	}
	_, s := liveOf(run)
	h.cancel(t, id)
	if s.ErrorRate != 1 || len(s.TopErrors) != 1 || s.TopErrors[0].Count < 5 || !strings.Contains(s.TopErrors[0].Cause, "503") || s.TTFTMs.P50 != nil {
		raw, _ := json.Marshal(s)
		t.Errorf("summary of failures %s", raw)
	}
	h.waitFor(t, id, 10*time.Second, terminal)
}

// With parallelism 2 the run's summary is the merge of both workers' (each sends the whole
// workload): it counts the requests of both, so it keeps up with the summed counts; one
// worker's alone would hold about half.
func TestParallelRunLiveSummaryMergesItsWorkers(t *testing.T) {
	h := start(t, &fakeModel{ttft: 10 * time.Millisecond, itl: 10 * time.Millisecond}, parallel())
	id := h.create(t, `{"deployment_execution_id":"exec-1","parallelism":2,"matrix":[{"isl":8,"osl":10}],"warmup_requests":0,
		"concurrency_stages":[{"concurrency":2,"num_requests":100000}]}`)
	run := h.waitFor(t, id, 30*time.Second, func(r *evalrun.Run) bool {
		done, s := liveOf(r)
		return done >= 24 && s != nil && s.Requests > 0
	})
	done, s := liveOf(run)
	h.cancel(t, id)
	// Each worker's count and summary are read from its one record, written together; at most
	// its two requests in flight may have entered one and not yet the other.
	if s.Requests < done-4 || s.Requests > done+4 {
		t.Errorf("summary of %d requests, the workers completed %d", s.Requests, done)
	}
	if s.TTFTMs.P50 == nil || *s.TTFTMs.P50 < 9.9 || s.TPOTMs.P50 == nil || *s.TPOTMs.P50 < 9.9 {
		t.Errorf("ttft %+v tpot %+v", s.TTFTMs, s.TPOTMs)
	}
	h.waitFor(t, id, 15*time.Second, terminal)
}
