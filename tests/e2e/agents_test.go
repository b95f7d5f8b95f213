package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/timingtest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka/wekatest"
)

// agentRecord is what the ordering checks read of a per-request record.
type agentRecord struct {
	SessionID       string   `json:"session_id"`
	Turn            *int     `json:"turn"`
	ScheduledAt     float64  `json:"scheduled_at_seconds"`
	StartedAt       float64  `json:"started_at_seconds"`
	CompletedAt     float64  `json:"completed_at_seconds"`
	Successful      bool     `json:"successful"`
	TimelineDriftMs *float64 `json:"timeline_drift_ms"`
}

type agentSummary struct {
	Total       int            `json:"total_requests"`
	Scheduled   *int           `json:"scheduled_requests"`
	Sent        int            `json:"sent_requests"`
	NotReleased *int           `json:"not_released_requests"`
	ByReason    map[string]int `json:"not_released_by_reason"`
	SuccessRate float64        `json:"success_rate"`
	Timeline    *struct {
		Count int     `json:"count"`
		P50   float64 `json:"p50_ms"`
		P99   float64 `json:"p99_ms"`
	} `json:"session_timeline_drift"`
}

// agentStack starts the pipeline with generated WEKA agent traces registered as a local dataset
// (generated-agents) and returns its API's base URL and the trace replayer's process id.
func agentStack(t *testing.T, traces []wekatest.Trace) (api string, replayer int) {
	t.Helper()
	stack := startStack(t, stackOptions{only: []string{"simulation-api", "trace-replayer", "result-analyzer"},
		env: map[string]string{"LENS_LEASE_TTL": "3s", "LENS_SWEEP_INTERVAL": "500ms"}})
	dir := filepath.Join(stack.DataDir(), "datasets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents.jsonl"), wekatest.JSONL(traces), 0o644); err != nil {
		t.Fatal(err)
	}
	meta := `{"name":"generated-agents","filename":"agents.jsonl","scenario":"coding","trace_format":"weka_public_dataset",` +
		`"description":"generated agent traces","license":"test"}`
	if err := os.WriteFile(filepath.Join(dir, "agents.dataset.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	return stack.APIURL + "/api/simulation", stack.PID("trace-replayer")
}

// runAgents replays the generated dataset with the given extra task fields and returns the
// finished task, its summary, warnings and records by "session/turn".
func runAgents(t *testing.T, api, endpoint, extra string) (taskView, agentSummary, []string, map[string]agentRecord) {
	t.Helper()
	id := postTask(t, api, `{"name":"agents","scenario":"coding","endpoint_url":"`+endpoint+`","model_name":"`+simModel+
		`","trace_dataset":"generated-agents","stream":true`+extra+`}`)
	v := waitForStatus(t, api, id, 2*time.Minute, "completed", "failed", "cancelled")
	if v.Status != "completed" {
		t.Fatalf("task ended %s: %s %v", v.Status, deref(v.ErrorMessage), v.Logs)
	}
	var result struct {
		Summary  agentSummary `json:"summary"`
		Warnings []string     `json:"warnings"`
	}
	if err := json.Unmarshal(v.Result, &result); err != nil {
		t.Fatal(err)
	}
	recs := map[string]agentRecord{}
	eachRecord(t, api, id, func(line []byte) {
		var r agentRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Turn == nil {
			t.Fatalf("a record without its turn: %s", line)
		}
		recs[r.SessionID+"/"+strconv.Itoa(*r.Turn)] = r
	})
	return v, result.Summary, result.Warnings, recs
}

// checkAgentOrder checks every dependency rule on the records of a complete replay: turns follow
// their previous turn, subagents start after the turn that spawns them, a joining turn starts
// after the last turn of every subagent it joins, and background subagents ran.
func checkAgentOrder(t *testing.T, traces []wekatest.Trace, recs map[string]agentRecord) {
	t.Helper()
	const slack = 1e-6
	for _, tr := range traces {
		for k := range tr.Turns {
			cur, ok := recs[tr.ID+"/"+strconv.Itoa(k)]
			if !ok || !cur.Successful {
				t.Fatalf("%s turn %d missing or failed", tr.ID, k)
			}
			if k > 0 && cur.StartedAt+slack < recs[tr.ID+"/"+strconv.Itoa(k-1)].CompletedAt {
				t.Errorf("%s turn %d started before turn %d completed", tr.ID, k, k-1)
			}
		}
		for _, s := range tr.Subagents {
			id := tr.ID + "/" + s.ID
			for j := range s.Requests {
				r, ok := recs[id+"/"+strconv.Itoa(j)]
				if !ok || !r.Successful {
					t.Fatalf("%s request %d missing or failed", id, j)
				}
				if j > 0 && r.StartedAt+slack < recs[id+"/"+strconv.Itoa(j-1)].CompletedAt {
					t.Errorf("%s request %d started before request %d completed", id, j, j-1)
				}
			}
			if first := recs[id+"/0"]; first.StartedAt+slack < recs[tr.ID+"/"+strconv.Itoa(s.AfterTurn)].CompletedAt {
				t.Errorf("%s started before its spawning turn %d completed", id, s.AfterTurn)
			}
			if s.Background {
				continue
			}
			last := recs[id+"/"+strconv.Itoa(len(s.Requests)-1)]
			if join := recs[tr.ID+"/"+strconv.Itoa(s.AfterTurn+1)]; join.StartedAt+slack < last.CompletedAt {
				t.Errorf("%s's joining turn %d started at %.4f before it completed at %.4f", id, s.AfterTurn+1, join.StartedAt, last.CompletedAt)
			}
		}
	}
}

// TestAgentTracesAtScaleFactor20 replays generated agent traces (parents, three subagents of
// one turn at different offsets, a joined one, a background one) 20 times faster, in both
// subagent timing modes, over the local stack. Counts and ordering rules fail at once; the
// bounds on when things happened (the replay's end, a subagent's start, the timeline drift)
// hold only while the host lets the simulator, the replayer and this process run: a pair of
// replays during which the host kept them off the CPU for longer than the tightest slack (a
// subagent's start, 100 ms) is replayed again (timingtest.RetryWith); one that misses a bound
// while the host did not delay it fails.
func TestAgentTracesAtScaleFactor20(t *testing.T) {
	endpoint, sim := startSimulatorProcess(t, "--time-to-first-token", "2ms", "--inter-token-latency", "1ms")
	traces := wekatest.Agents(3, 60)
	api, replayer := agentStack(t, traces)
	timingtest.RetryWith(t, []int{sim, replayer}, 3, 100*time.Millisecond, func() error {
		return replayAgentsAtScaleFactor20(t, api, endpoint, traces)
	})
}

// replayAgentsAtScaleFactor20 is one pair of replays of TestAgentTracesAtScaleFactor20: it
// fails the test on a count or an order, and returns the timing bounds missed.
func replayAgentsAtScaleFactor20(t *testing.T, api, endpoint string, traces []wekatest.Trace) error {
	t.Helper()
	requests, recordedEnd := 0, 0.0
	for _, tr := range traces {
		requests += len(tr.Turns)
		for _, s := range tr.Subagents {
			requests += len(s.Requests)
		}
		recordedEnd = max(recordedEnd, tr.End())
	}
	var late []error

	// recorded_offsets: the recorded timeline, compressed 20 times.
	began := time.Now()
	_, s, warnings, recs := runAgents(t, api, endpoint, `,"scale_factor":20,"backend_options":{"subagent_timing":"recorded_offsets"}`)
	t.Logf("recorded_offsets: %d requests, recorded %.1f s, task took %s", len(recs), recordedEnd, time.Since(began))
	if s.Total != requests || s.Sent != requests || s.Scheduled == nil || *s.Scheduled != requests || *s.NotReleased != 0 ||
		s.SuccessRate != 100 || len(warnings) != 0 {
		t.Fatalf("summary %+v, warnings %q; want all %d requests", s, warnings, requests)
	}
	checkAgentOrder(t, traces, recs)
	last := 0.0
	for _, r := range recs {
		last = max(last, r.CompletedAt)
	}
	// A twentieth of the recorded time: never less (every gap is kept, only compressed), and
	// later only by what the endpoint and scheduling add along a trace's longest chain.
	want := recordedEnd / 20
	if last < want-0.05 {
		t.Fatalf("the replay ended at %.3f s, before the %.3f s of the recorded %.1f s / 20", last, want, recordedEnd)
	}
	if last > want+1.5 {
		late = append(late, fmt.Errorf("the replay ended at %.3f s, want about %.3f s (recorded %.1f s / 20)", last, want, recordedEnd))
	}
	// Subagents are released at their recorded offsets from the spawning turn, compressed, and
	// start about then.
	for _, tr := range traces {
		for _, sa := range tr.Subagents {
			child, spawn := recs[tr.ID+"/"+sa.ID+"/0"], recs[tr.ID+"/"+strconv.Itoa(sa.AfterTurn)]
			want := (sa.T - tr.Turns[sa.AfterTurn].T) / 20
			if got := child.ScheduledAt - spawn.ScheduledAt; math.Abs(got-want) > 0.002 {
				t.Errorf("%s/%s released %.4f s after its spawning turn, want the recorded %.4f", tr.ID, sa.ID, got, want)
			}
			if got := child.StartedAt - spawn.StartedAt; math.Abs(got-want) > 0.1 {
				late = append(late, fmt.Errorf("%s/%s started %.4f s after its spawning turn, want about %.4f", tr.ID, sa.ID, got, want))
			}
		}
	}
	if s.Timeline == nil || s.Timeline.Count != requests {
		t.Fatalf("session timeline drift %+v", s.Timeline)
	}
	recordedDrift, recordedRecs := *s.Timeline, recs

	// spawn_completion (the default): the same order, but the three subagents of turn 1 start
	// together when it completes, and turn 2 adds its whole recorded gap after the last of them,
	// so turn 2 is behind the recorded timeline by at least the subagents' compressed run (one
	// unit of the generator's clock, less three recorded server times), and the summary shows it.
	_, s, _, recs = runAgents(t, api, endpoint, `,"scale_factor":20`)
	if s.Sent != requests || s.SuccessRate != 100 || s.Timeline == nil {
		t.Fatalf("spawn_completion summary %+v", s)
	}
	checkAgentOrder(t, traces, recs)
	t.Logf("session timeline drift p50/p99: recorded_offsets %.1f/%.1f ms, spawn_completion %.1f/%.1f ms",
		recordedDrift.P50, recordedDrift.P99, s.Timeline.P50, s.Timeline.P99)
	for _, tr := range traces {
		unit := tr.Subagents[0].Requests[1].T - tr.Subagents[0].Requests[0].T
		floor := (unit - 3*wekatest.APITime) / 20 * 1000
		spawned, recorded := recs[tr.ID+"/2"].TimelineDriftMs, recordedRecs[tr.ID+"/2"].TimelineDriftMs
		if spawned == nil || recorded == nil || *spawned < floor-1 {
			t.Errorf("%s turn 2 timeline drift: spawn_completion %v ms (at least %.1f), recorded_offsets %v ms",
				tr.ID, deref64(spawned), floor, deref64(recorded))
		} else if *recorded >= *spawned {
			late = append(late, fmt.Errorf("%s turn 2 timeline drift: recorded_offsets %.1f ms, not less than spawn_completion's %.1f ms",
				tr.ID, *recorded, *spawned))
		}
	}
	return errors.Join(late...)
}

func deref64(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestCappedAgentRunReportsUnreleasedRequests: a duration shorter than the compressed trace ends
// the run completed, with the requests never released counted, explained and logged.
func TestCappedAgentRunReportsUnreleasedRequests(t *testing.T) {
	endpoint := startSimulator(t, "--time-to-first-token", "2ms", "--inter-token-latency", "1ms")
	traces := wekatest.Agents(2, 60)
	api, _ := agentStack(t, traces)
	v, s, warnings, recs := runAgents(t, api, endpoint, `,"scale_factor":20,"duration_seconds":1`)
	if s.Scheduled == nil || s.NotReleased == nil || s.Sent != len(recs) || s.Sent == 0 || s.Sent >= *s.Scheduled ||
		*s.NotReleased != *s.Scheduled-s.Sent {
		t.Fatalf("summary %+v with %d records", s, len(recs))
	}
	sum := 0
	for _, n := range s.ByReason {
		sum += n
	}
	if sum != *s.NotReleased || s.ByReason["after_duration"] == 0 {
		t.Fatalf("reasons %v do not add up to %d", s.ByReason, *s.NotReleased)
	}
	want := strconv.Itoa(*s.NotReleased) + " of " + strconv.Itoa(*s.Scheduled) + " scheduled requests were never released"
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], want) || !strings.Contains(warnings[0], "due after the run's duration of 1s") {
		t.Fatalf("warnings %q, want %q...", warnings, want)
	}
	logs := strings.Join(v.Logs, "\n")
	if !strings.Contains(logs, want) || strings.Contains(logs, "every scheduled request was sent") {
		t.Fatalf("the task log does not tell what happened:\n%s", logs)
	}
}
