package tracereplayer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/simtask"
	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/tests/tracefixture"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka/wekatest"
)

// wekaWithSubagents is a real WEKA trace with four subagents: three spawned after turn 0 and
// joined before turn 1, one spawned after turn 6 and joined before turn 7.
const wekaWithSubagents = "weka/kv-cache-tester/trace_0277.json"

// The real-trace cases run in addition to the generated ones (wekatest.Agents below); without
// the real traces the run ends with one line naming the cases skipped.
var shared tracefixture.Shared

func TestMain(m *testing.M) { shared.Main(m, "functions/tracereplayer") }

func sharedTrace(t *testing.T, rel string) string {
	t.Helper()
	path := filepath.Join(shared.Traces(t, wasmtest.RepoRoot(t)), rel)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the real traces lack %s: %v", rel, err)
	}
	return path
}

// testReplayer is a replayer over the built-in parser modules.
func testReplayer(t *testing.T) *replayer {
	t.Helper()
	host, err := wasmhost.New(context.Background(), wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), CacheDir: wasmtest.CacheDir(t), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(context.Background()) })
	return &replayer{host: host}
}

// scheduleOf parses a task's trace into a spool and loads every request the way the engine does.
func scheduleOf(t *testing.T, p *replayer, task *simtask.Task) []loadgen.Request {
	t.Helper()
	dir := t.TempDir()
	task.TaskDir = dir
	sched, _, err := p.schedule(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]loadgen.Request, sched.Len())
	for i := range out {
		if err := sched.Load(i, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sched.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the spool outlived its schedule: %v", left)
	}
	return out
}

func traceTask(format, path string) *simtask.Task {
	return &simtask.Task{ID: "t1",
		Prompt:     simtask.Prompt{Trace: simtask.Trace{Path: path, Format: format, FixedSchedule: true, SynthesisSpeedupRatio: 1}},
		Simulation: simtask.Simulation{DurationSeconds: 3600}}
}

func TestScheduleCarriesSubagentLinksAndContextModes(t *testing.T) {
	p := testReplayer(t)
	schedule := scheduleOf(t, p, traceTask("weka_public_dataset", sharedTrace(t, wekaWithSubagents)))
	links := map[string]loadgen.SubagentLink{}
	for _, r := range schedule {
		if r.ContextMode != loadgen.ContextSelfContained {
			t.Errorf("%s/%d: context mode %q, want WEKA's self-contained turns", r.SessionID, r.Turn, r.ContextMode)
		}
		if r.Subagent == nil {
			if r.SessionID != "trace_0277" {
				t.Errorf("%s/%d has no subagent link", r.SessionID, r.Turn)
			}
			continue
		}
		links[r.SessionID] = *r.Subagent
		if r.Metadata["parent_session_id"] != "trace_0277" || r.Metadata["agent_type"] == nil {
			t.Errorf("%s/%d: metadata %v lacks the subagent's parent and type", r.SessionID, r.Turn, r.Metadata)
		}
	}
	want := map[string]loadgen.SubagentLink{
		"trace_0277/agent_001": {ParentSessionID: "trace_0277", SpawnAfterTurn: 0, JoinBeforeTurn: 1},
		"trace_0277/agent_002": {ParentSessionID: "trace_0277", SpawnAfterTurn: 0, JoinBeforeTurn: 1},
		"trace_0277/agent_003": {ParentSessionID: "trace_0277", SpawnAfterTurn: 0, JoinBeforeTurn: 1},
		"trace_0277/agent_004": {ParentSessionID: "trace_0277", SpawnAfterTurn: 6, JoinBeforeTurn: 7},
	}
	if fmt.Sprint(links) != fmt.Sprint(want) {
		t.Errorf("links %v\nwant %v", links, want)
	}
}

// Mooncake: synthesised sessions accumulate their turns; literal histories do not.
func TestMooncakeContextModes(t *testing.T) {
	p := testReplayer(t)
	moon := filepath.Join(t.TempDir(), "sessions.jsonl")
	rows := `{"session_id":"a","timestamp":0,"input_length":8,"output_length":2,"hash_ids":[1]}
{"session_id":"a","delay":5,"input_length":4,"output_length":2}
{"session_id":"m","timestamp":1,"messages":[{"role":"user","content":"hi"}],"output_length":2}
`
	if err := os.WriteFile(moon, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	schedule := scheduleOf(t, p, traceTask("mooncake_trace", moon))
	modes := map[string]loadgen.ContextMode{}
	for _, r := range schedule {
		modes[fmt.Sprintf("%s/%d", r.SessionID, r.Turn)] = r.ContextMode
	}
	if modes["a/0"] != loadgen.ContextDeltas || modes["a/1"] != loadgen.ContextDeltas || modes["m/0"] != loadgen.ContextSelfContained {
		t.Errorf("mooncake context modes %v", modes)
	}
}

// TestRealWEKASubagentsReplayInOrder replays a real WEKA trace with subagents, its recorded
// delays compressed 2000 times, against a server whose latency varies per request, and checks
// AIPerf's ordering: a child starts only after its spawning turn completed, and a join turn
// only after every child it joins completed.
func TestRealWEKASubagentsReplayInOrder(t *testing.T) {
	p := testReplayer(t)
	schedule := scheduleOf(t, p, traceTask("weka_public_dataset", sharedTrace(t, wekaWithSubagents)))
	const compress = 2000
	for i := range schedule {
		r := &schedule[i]
		if r.ArrivalMs != nil {
			v := *r.ArrivalMs / compress
			r.ArrivalMs = &v
		}
		if r.DelayMs != nil {
			v := *r.DelayMs / compress
			r.DelayMs = &v
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		time.Sleep(time.Duration(body.MaxTokens%13) * time.Millisecond) // 0-12 ms, varying by request
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	var mu sync.Mutex
	recs := map[int64]loadgen.Record{}
	sink := loadgen.SinkFunc(func(r loadgen.Record) error {
		mu.Lock()
		defer mu.Unlock()
		recs[r.RequestID] = r
		return nil
	})
	cfg := loadgen.Config{BaseURL: srv.URL, Model: "m", API: loadgen.APIChat, Seed: 1}
	st, err := loadgen.Run(context.Background(), cfg, schedule, sink)
	if err != nil {
		t.Fatal(err)
	}
	if st.Successful != int64(len(schedule)) {
		t.Fatalf("stats %+v for %d requests", st, len(schedule))
	}

	// Index records by session and turn, and find each child's first and last turn.
	type span struct{ first, last loadgen.Record }
	turn := map[string]map[int]loadgen.Record{}
	sessions := map[string]*span{}
	for i, r := range schedule {
		rec := recs[int64(i)+1]
		if turn[r.SessionID] == nil {
			turn[r.SessionID] = map[int]loadgen.Record{}
		}
		turn[r.SessionID][r.Turn] = rec
		s := sessions[r.SessionID]
		if s == nil {
			s = &span{rec, rec}
			sessions[r.SessionID] = s
		}
		if rec.Turn < s.first.Turn {
			s.first = rec
		}
		if rec.Turn > s.last.Turn {
			s.last = rec
		}
	}
	const slack = 1e-6
	checked := map[string]bool{}
	for i, r := range schedule {
		l := r.Subagent
		if l == nil || checked[r.SessionID] {
			continue
		}
		checked[r.SessionID] = true
		child := sessions[r.SessionID]
		spawn := turn[l.ParentSessionID][l.SpawnAfterTurn]
		if child.first.StartedAtSeconds+slack < spawn.CompletedAtSeconds {
			t.Errorf("%s started at %.4f before parent turn %d completed at %.4f", r.SessionID, child.first.StartedAtSeconds, l.SpawnAfterTurn, spawn.CompletedAtSeconds)
		}
		delay := *schedule[child.first.RequestID-1].DelayMs / 1000
		if got := child.first.ScheduledAtSeconds - spawn.CompletedAtSeconds; got < delay-slack || got > delay+0.002 {
			t.Errorf("%s released %.4f s after its spawn, want its delay %.4f", r.SessionID, got, delay)
		}
		join := turn[l.ParentSessionID][l.JoinBeforeTurn]
		if join.StartedAtSeconds+slack < child.last.CompletedAtSeconds {
			t.Errorf("parent turn %d started at %.4f before %s completed at %.4f (request %d)", l.JoinBeforeTurn, join.StartedAtSeconds, r.SessionID, child.last.CompletedAtSeconds, i+1)
		}
	}
	if len(checked) != 4 {
		t.Errorf("checked %d subagent sessions, want the trace's 4", len(checked))
	}
}

// A generated agent trace at scale 20 with a range: arrivals, delays, join gaps and recorded
// positions all land on the run's clock, shifted by the range's start and divided by 20.
func TestWEKAScheduleAtAScaleFactorAndRange(t *testing.T) {
	p := testReplayer(t)
	traces := wekatest.Agents(1, 60)
	tr := traces[0]
	path := filepath.Join(t.TempDir(), "agents.jsonl")
	if err := os.WriteFile(path, wekatest.JSONL(traces), 0o644); err != nil {
		t.Fatal(err)
	}
	task := traceTask("weka_public_dataset", path)
	start := (tr.Turns[0].T + tr.Turns[1].T) / 2 // turn 0 is left out, turn 1 and its subagents stay
	task.Prompt.Trace.SynthesisSpeedupRatio, task.Prompt.Trace.StartSeconds = 20, start
	got := map[string]loadgen.Request{}
	for _, r := range scheduleOf(t, p, task) {
		got[fmt.Sprintf("%s/%d", r.SessionID, r.Turn)] = r
	}
	if _, ok := got[tr.ID+"/0"]; ok {
		t.Fatal("turn 0 is before the range")
	}
	ms := func(s float64) float64 { return math.Round((s-start)*1000/20*1000) / 1000 }
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 0.01 }
	t1 := got[tr.ID+"/1"]
	if !near(t1.ArrivalMs, ms(tr.Turns[1].T)) || !near(t1.RecordedMs, ms(tr.Turns[1].T)) {
		t.Errorf("turn 1: arrival %v, recorded %v, want both %.3f", deref(t1.ArrivalMs), deref(t1.RecordedMs), ms(tr.Turns[1].T))
	}
	t2 := got[tr.ID+"/2"]
	wantDelay := (tr.Turns[2].T - tr.Turns[1].T - tr.Turns[1].APITime) * 1000 / 20
	lastEnd := max(tr.Subagents[0].End(), tr.Subagents[1].End(), tr.Subagents[2].End())
	if !near(t2.DelayMs, wantDelay) || !near(t2.JoinDelayMs, (tr.Turns[2].T-lastEnd)*1000/20) {
		t.Errorf("turn 2: delay %v (want %.3f), join delay %v (want %.3f)", deref(t2.DelayMs), wantDelay, deref(t2.JoinDelayMs), (tr.Turns[2].T-lastEnd)*1000/20)
	}
	c := got[tr.ID+"/agent_b/0"]
	if c.Subagent == nil || c.Subagent.SpawnAfterTurn != 1 || !near(c.RecordedMs, ms(tr.Subagents[1].T)) {
		t.Errorf("agent_b: %+v", c)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestSubagentTimingOption(t *testing.T) {
	task := &simtask.Task{ID: "t1", EndpointURL: "http://127.0.0.1:1", ModelName: "m",
		Simulation: simtask.Simulation{BackendOptions: map[string]any{"subagent_timing": "recorded_offsets"}}}
	cfg, err := loadConfig(task, "")
	if err != nil || cfg.SubagentTiming != loadgen.SubagentsAtRecordedOffsets {
		t.Fatalf("%v %q", err, cfg.SubagentTiming)
	}
	task.Simulation.BackendOptions["subagent_timing"] = "whenever"
	if _, err := loadConfig(task, ""); err == nil || !strings.Contains(err.Error(), "backend_options.subagent_timing") {
		t.Fatalf("bad timing accepted: %v", err)
	}
}

func TestReplayCountsSayWhatWasNeverReleased(t *testing.T) {
	c := replayCounts(loadgen.Stats{Scheduled: 100, Sent: 43, NotSent: 57,
		Unreleased: loadgen.Unreleased{AfterDuration: 7, Waiting: 40}}, 10)
	if c.Scheduled != 110 || c.Sent != 43 || c.NotSent[simtask.NotSentAfterDuration] != 17 || c.NotSent[simtask.NotSentWaiting] != 40 || len(c.NotSent) != 2 {
		t.Fatalf("%+v", c)
	}
	want := "67 of 110 scheduled requests were never released: 17 were due after the run's duration of 120s; 40 waited on requests that were never sent"
	if got := c.Warning(120); !strings.HasPrefix(got, want) {
		t.Fatalf("warning %q", got)
	}
	if got := replayCounts(loadgen.Stats{Scheduled: 3, Sent: 3}, 0).Warning(60); got != "" {
		t.Fatalf("a complete run warns %q", got)
	}
}

// Without an end, the duration bounds a one-timeline format's window; what it leaves out is
// counted, so the run can say those requests were due after the duration.
func TestTheDurationBoundIsCounted(t *testing.T) {
	p := testReplayer(t)
	moon := filepath.Join(t.TempDir(), "rows.jsonl")
	rows := `{"timestamp":0,"input_length":8,"output_length":2}
{"timestamp":1000,"input_length":8,"output_length":2}
{"timestamp":5000,"input_length":8,"output_length":2}
{"timestamp":9000,"input_length":8,"output_length":2}
`
	if err := os.WriteFile(moon, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	task := traceTask("mooncake_trace", moon)
	task.Simulation.DurationSeconds, task.TaskDir = 2, t.TempDir()
	sched, beyond, err := p.schedule(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	if sched.Len() != 2 || beyond != 2 {
		t.Fatalf("%d scheduled, %d beyond the duration; want 2 and 2", sched.Len(), beyond)
	}
}
