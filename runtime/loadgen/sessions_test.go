package loadgen_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/timingtest"
)

// link is a subagent link to parent session p.
func link(p string, spawn, join int) *loadgen.SubagentLink {
	return &loadgen.SubagentLink{ParentSessionID: p, SpawnAfterTurn: spawn, JoinBeforeTurn: join}
}

// bySessionTurn indexes records as "session/turn".
func bySessionTurn(recs []loadgen.Record) map[string]loadgen.Record {
	out := map[string]loadgen.Record{}
	for _, r := range recs {
		out[fmt.Sprintf("%s/%d", r.SessionID, r.Turn)] = r
	}
	return out
}

// slack absorbs float rounding of record times (seconds).
const slack = 1e-6

func TestSubagentsSpawnAfterTheirTurnAndTheJoinWaitsForTheSlowest(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 20 * time.Millisecond, Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	schedule := []loadgen.Request{
		{SessionID: "p", Turn: 0, ArrivalMs: f64(0)},
		{SessionID: "p", Turn: 1, DelayMs: f64(10)},
		{SessionID: "p", Turn: 2, DelayMs: f64(0)},
		// Two children spawned by turn 0 and joined before turn 1; b is the slower one.
		{SessionID: "a", Turn: 0, DelayMs: f64(5), Subagent: link("p", 0, 1)},
		{SessionID: "a", Turn: 1, DelayMs: f64(5), Subagent: link("p", 0, 1)},
		{SessionID: "b", Turn: 0, DelayMs: f64(120), Subagent: link("p", 0, 1)},
		// A background child of turn 1 that nobody waits for.
		{SessionID: "bg", Turn: 0, DelayMs: f64(300), Subagent: link("p", 1, -1)},
	}
	recs, st := run(t, cfg, schedule)
	if st.Successful != 7 || st.NotSent != 0 {
		t.Fatalf("stats %+v", st)
	}
	r := bySessionTurn(recs)
	p0, p1, p2, a0, a1, b0, bg0 := r["p/0"], r["p/1"], r["p/2"], r["a/0"], r["a/1"], r["b/0"], r["bg/0"]

	// A child's first delay counts from its spawn: the completion of the spawning turn.
	for name, c := range map[string]struct {
		rec    loadgen.Record
		parent loadgen.Record
		delay  float64
	}{"a": {a0, p0, 0.005}, "b": {b0, p0, 0.120}, "bg": {bg0, p1, 0.300}} {
		if got := c.rec.ScheduledAtSeconds - c.parent.CompletedAtSeconds; math.Abs(got-c.delay) > 0.001 {
			t.Errorf("child %s released %.4f s after its spawn, want %.3f", name, got, c.delay)
		}
		if c.rec.StartedAtSeconds+slack < c.parent.CompletedAtSeconds {
			t.Errorf("child %s started at %.4f before its spawning turn completed at %.4f", name, c.rec.StartedAtSeconds, c.parent.CompletedAtSeconds)
		}
	}
	if a1.ScheduledAtSeconds+slack < a0.CompletedAtSeconds {
		t.Errorf("a child's turns must still chain: a/1 at %.4f, a/0 done %.4f", a1.ScheduledAtSeconds, a0.CompletedAtSeconds)
	}
	// The join turn waits for the slowest child, then its own delay.
	slowest := max(a1.CompletedAtSeconds, b0.CompletedAtSeconds)
	if b0.CompletedAtSeconds < a1.CompletedAtSeconds {
		t.Fatalf("test set-up: b should finish last (a %.4f, b %.4f)", a1.CompletedAtSeconds, b0.CompletedAtSeconds)
	}
	if got := p1.ScheduledAtSeconds - slowest; math.Abs(got-0.010) > 0.001 {
		t.Errorf("join turn released %.4f s after the last child completed, want its delay 0.010", got)
	}
	// Nobody waits for the background child, but the run does.
	if p2.StartedAtSeconds >= bg0.StartedAtSeconds {
		t.Errorf("turn 2 (%.4f) waited for the background child (%.4f)", p2.StartedAtSeconds, bg0.StartedAtSeconds)
	}
}

func TestSubagentsSpawnedAtTheParentsStart(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 30 * time.Millisecond, Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	schedule := []loadgen.Request{
		{SessionID: "p", Turn: 0, ArrivalMs: f64(50)},
		{SessionID: "p", Turn: 1},
		{SessionID: "bg", Turn: 0, DelayMs: f64(20), Subagent: link("p", -1, -1)},
		// Spawned at the parent's start and joined before its first turn: that turn waits.
		{SessionID: "first", Turn: 0, DelayMs: f64(0), Subagent: link("p", -1, 0)},
	}
	recs, _ := run(t, cfg, schedule)
	r := bySessionTurn(recs)
	if got := r["bg/0"].ScheduledAtSeconds; math.Abs(got-0.070) > 0.0005 {
		t.Errorf("a child spawned at the parent's start (0.050) with delay 20 ms released at %.4f, want 0.070", got)
	}
	if got := r["first/0"].ScheduledAtSeconds; math.Abs(got-0.050) > 0.0005 {
		t.Errorf("child joined before turn 0 released at %.4f, want the parent's start 0.050", got)
	}
	if p0, c := r["p/0"], r["first/0"]; p0.ScheduledAtSeconds+slack < c.CompletedAtSeconds || p0.StartedAtSeconds+slack < c.CompletedAtSeconds {
		t.Errorf("turn 0 released at %.4f before the child it joins completed at %.4f", p0.ScheduledAtSeconds, c.CompletedAtSeconds)
	}
}

func TestAFailedParentTurnStillSpawnsItsChildren(t *testing.T) {
	fake := &fakeOpenAI{Status: 500}
	cfg := baseConfig(fake.start(t).URL)
	schedule := []loadgen.Request{
		{SessionID: "p", Turn: 0, ArrivalMs: f64(0)},
		{SessionID: "p", Turn: 1},
		{SessionID: "c", Turn: 0, Subagent: link("p", 0, 1)},
	}
	recs, st := run(t, cfg, schedule)
	if st.Sent != 3 || st.Failed != 3 {
		t.Fatalf("stats %+v", st)
	}
	r := bySessionTurn(recs)
	if r["c/0"].StartedAtSeconds+slack < r["p/0"].CompletedAtSeconds || r["p/1"].StartedAtSeconds+slack < r["c/0"].CompletedAtSeconds {
		t.Errorf("order broken after failures: %+v", r)
	}
}

func TestCutOffSubagentsAreNotSentAndNeitherAreTheirJoins(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	cfg.Duration = 500 * time.Millisecond
	schedule := []loadgen.Request{
		{SessionID: "p", Turn: 0, ArrivalMs: f64(0)},
		{SessionID: "p", Turn: 1},
		{SessionID: "late", Turn: 0, DelayMs: f64(5000), Subagent: link("p", 0, 1)}, // released after the duration
		{SessionID: "never", Turn: 0, Subagent: link("p", 1, -1)},                   // its spawning turn is never sent
		{SessionID: "early", Turn: 0, DelayMs: f64(1), Subagent: link("p", 0, -1)},
	}
	sink := &memSink{}
	began := time.Now()
	st, err := loadgen.Run(context.Background(), cfg, schedule, sink)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("a cut-off child kept the run going for %s", took)
	}
	got := map[string]bool{}
	for _, r := range sink.byID() {
		got[r.SessionID] = true
	}
	if st.Sent != 2 || st.NotSent != 3 || !got["p"] || !got["early"] {
		t.Fatalf("stats %+v, sessions sent %v; want p/0 and early only", st, got)
	}
	// late is due after the duration; p/1 waits on it and never is, and so neither is never.
	if want := (loadgen.Unreleased{AfterDuration: 1, Waiting: 2}); st.Unreleased != want || st.Unreleased.Total() != st.NotSent {
		t.Fatalf("unreleased %+v, want %+v", st.Unreleased, want)
	}
}

func TestRootSessionsDueAfterTheDurationCountWithEverythingThatWaitsOnThem(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	cfg.Duration = 300 * time.Millisecond
	schedule := []loadgen.Request{
		{SessionID: "a", Turn: 0, ArrivalMs: f64(0)},
		{SessionID: "a", Turn: 1, DelayMs: f64(10_000)}, // its own release is after the duration
		{SessionID: "a", Turn: 2},
		{SessionID: "b", Turn: 0, ArrivalMs: f64(5_000)}, // a whole session after the duration
		{SessionID: "b", Turn: 1},
		{SessionID: "bc", Turn: 0, Subagent: link("b", 0, 1)},
		{SessionID: "bs", Turn: 0, Subagent: link("b", -1, -1)},
		{ArrivalMs: f64(6_000)},
	}
	_, st := run(t, cfg, schedule)
	// Due after the duration: a/1, b/0 and the single request; waiting on those: a/2, b/1, bc, bs.
	if want := (loadgen.Unreleased{AfterDuration: 3, Waiting: 4}); st.Sent != 1 || st.Unreleased != want || st.NotSent != want.Total() {
		t.Fatalf("stats %+v, want 1 sent and unreleased %+v", st, want)
	}
}

func TestRecordedOffsetsPlaceSubagentsAndJoinsOnTheRecordedTimeline(t *testing.T) {
	// The parent's turn 0 is recorded at 0 ms and takes ~10 ms here; its subagents were recorded
	// starting 40 and 80 ms after it, and turn 1 starts 15 ms after the later one ended (its delay
	// after turn 0 alone would be 20 ms).
	schedule := func() []loadgen.Request {
		return []loadgen.Request{
			{SessionID: "p", Turn: 0, ArrivalMs: f64(0), RecordedMs: f64(0)},
			{SessionID: "p", Turn: 1, DelayMs: f64(20), JoinDelayMs: f64(15), RecordedMs: f64(130)},
			{SessionID: "c1", Turn: 0, DelayMs: f64(0), RecordedMs: f64(40), Subagent: link("p", 0, 1)},
			{SessionID: "c2", Turn: 0, DelayMs: f64(0), RecordedMs: f64(80), Subagent: link("p", 0, 1)},
			{SessionID: "c2", Turn: 1, DelayMs: f64(5), RecordedMs: f64(100), Subagent: link("p", 0, 1)},
		}
	}
	fake := &fakeOpenAI{TTFT: 10 * time.Millisecond, Tokens: 1}
	url := fake.start(t).URL

	cfg := baseConfig(url)
	cfg.SubagentTiming = loadgen.SubagentsAtRecordedOffsets
	// The offsets hold only when the parent's turn 0 completes before the first recorded one
	// (40 ms), and the drifts are measured lateness with 5 ms of slack: a run in which the host
	// kept this process (the engine and the fake endpoint) off the CPU for longer than that is
	// measured again rather than blamed on the engine (timingtest.Retry).
	timingtest.Retry(t, 3, 5*time.Millisecond, func() error {
		recs, st := run(t, cfg, schedule())
		if st.Successful != 5 {
			t.Fatalf("stats %+v", st)
		}
		var errs []error
		r := bySessionTurn(recs)
		p0, p1, c1, c2, c21 := r["p/0"], r["p/1"], r["c1/0"], r["c2/0"], r["c2/1"]
		for name, c := range map[string]struct {
			rec    loadgen.Record
			offset float64
		}{"c1": {c1, 0.040}, "c2": {c2, 0.080}} {
			if got := c.rec.ScheduledAtSeconds - p0.ScheduledAtSeconds; math.Abs(got-c.offset) > 0.001 {
				errs = append(errs, fmt.Errorf("%s released %.4f s after its spawning turn, want the recorded %.3f", name, got, c.offset))
			}
			if c.rec.StartedAtSeconds+slack < p0.CompletedAtSeconds {
				t.Errorf("%s started before its spawning turn completed", name)
			}
		}
		if c21.ScheduledAtSeconds+slack < c2.CompletedAtSeconds+0.005 {
			t.Errorf("a subagent's later turn must still follow its previous turn: %.4f vs %.4f", c21.ScheduledAtSeconds, c2.CompletedAtSeconds)
		}
		if got := p1.ScheduledAtSeconds - c21.CompletedAtSeconds; math.Abs(got-0.015) > 0.001 {
			errs = append(errs, fmt.Errorf("join turn released %.4f s after the last subagent completed, want the recorded gap 0.015", got))
		}
		// Every request carries how far it drifted from the recorded timeline; on this fake
		// endpoint the subagents land on it, and the join only as late as the subagents' extra
		// service time.
		for key, rec := range r {
			if rec.TimelineDriftMs == nil {
				t.Fatalf("%s has no timeline drift", key)
			}
		}
		for _, rec := range []loadgen.Record{p0, c1, c2} {
			if d := *rec.TimelineDriftMs; d < -0.5 || d > 5 {
				errs = append(errs, fmt.Errorf("%s/%d timeline drift %.3f ms, want about 0", rec.SessionID, rec.Turn, d))
			}
		}
		return errors.Join(errs...)
	})

	// The default places the subagents at the spawning turn's completion instead, and adds the
	// join turn's full delay after the last of them.
	recs, _ := run(t, baseConfig(url), schedule())
	r := bySessionTurn(recs)
	p0, p1, c1, c21 := r["p/0"], r["p/1"], r["c1/0"], r["c2/1"]
	if got := c1.ScheduledAtSeconds - p0.CompletedAtSeconds; math.Abs(got) > 0.001 {
		t.Errorf("spawn_completion: c1 released %.4f s after its spawning turn completed, want 0", got)
	}
	if got := p1.ScheduledAtSeconds - c21.CompletedAtSeconds; math.Abs(got-0.020) > 0.001 {
		t.Errorf("spawn_completion: join released %.4f s after the last subagent, want its delay 0.020", got)
	}
}

func TestRecordedOffsetsStillWaitForTheSpawningTurnAndTheJoinsOwnDelay(t *testing.T) {
	// The endpoint is slower than the recording: the subagent cannot start at its recorded 5 ms
	// and waits for its spawning turn (~40 ms); the join's own delay after turn 0 (200 ms) is
	// later than the recorded gap after the subagent.
	fake := &fakeOpenAI{TTFT: 40 * time.Millisecond, Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	cfg.SubagentTiming = loadgen.SubagentsAtRecordedOffsets
	recs, _ := run(t, cfg, []loadgen.Request{
		{SessionID: "p", Turn: 0, ArrivalMs: f64(0), RecordedMs: f64(0)},
		{SessionID: "p", Turn: 1, DelayMs: f64(200), JoinDelayMs: f64(1), RecordedMs: f64(220)},
		{SessionID: "c", Turn: 0, RecordedMs: f64(5), Subagent: link("p", 0, 1)},
	})
	r := bySessionTurn(recs)
	if got := r["c/0"].ScheduledAtSeconds - r["p/0"].CompletedAtSeconds; math.Abs(got) > 0.001 {
		t.Errorf("subagent released %.4f s after its spawning turn completed, want at once", got)
	}
	if got := r["p/1"].ScheduledAtSeconds - r["p/0"].CompletedAtSeconds; math.Abs(got-0.200) > 0.001 {
		t.Errorf("join released %.4f s after its previous turn, want its own delay 0.200", got)
	}
	if d := r["p/1"].TimelineDriftMs; d == nil || *d < 15 {
		t.Errorf("the join is ~40 ms behind the recording (turn 0 took 40 ms, not 20), drift %v", d)
	}
}

func TestTurnZeroIsInEveryRecord(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	var out strings.Builder
	sink := loadgen.NewJSONLWriter(&out)
	if _, err := loadgen.Run(context.Background(), cfg, []loadgen.Request{{SessionID: "s"}, {}}, sink); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !strings.Contains(l, `"turn":0`) {
			t.Errorf("record without its turn: %s", l)
		}
	}
}

func TestStoppingMidSubagentEndsEveryGoroutine(t *testing.T) {
	fake := &fakeOpenAI{TTFT: 10 * time.Second}
	srv := fake.start(t)
	cfg := baseConfig(srv.URL)
	schedule := []loadgen.Request{
		{SessionID: "p", Turn: 0, ArrivalMs: f64(0)},
		{SessionID: "p", Turn: 1},
		{SessionID: "p", Turn: 2},
		{SessionID: "inflight", Turn: 0, Subagent: link("p", -1, 1)},                        // in flight at the stop
		{SessionID: "sleeping", Turn: 0, DelayMs: f64(60_000), Subagent: link("p", -1, -1)}, // waiting for its release
	}
	before := runtime.NumGoroutine()
	st, _ := runAndStop(t, cfg, schedule)
	if st.Sent != 2 || st.NotSent != 3 {
		t.Errorf("stats %+v: want p/0 and the in-flight child sent, the rest not", st)
	}
	// p/1 (waiting for its child) and the sleeping child were stopped; p/2 waited on p/1.
	if want := (loadgen.Unreleased{RunEnded: 2, Waiting: 1}); st.Unreleased != want {
		t.Errorf("unreleased %+v, want %+v", st.Unreleased, want)
	}
	expectGoroutinesBackTo(t, before)
}

func TestSubagentLinksAreValidated(t *testing.T) {
	fake := &fakeOpenAI{}
	cfg := baseConfig(fake.start(t).URL)
	parent := []loadgen.Request{{SessionID: "p", Turn: 0}, {SessionID: "p", Turn: 1}, {SessionID: "p", Turn: 2}}
	with := func(extra ...loadgen.Request) []loadgen.Request {
		return append(append([]loadgen.Request{}, parent...), extra...)
	}
	tests := []struct {
		name     string
		schedule []loadgen.Request
		want     string
	}{
		{"unknown parent", with(loadgen.Request{SessionID: "c", Subagent: link("nobody", 0, 1)}),
			`request 4: subagent session "c": parent session "nobody" is not in the schedule`},
		{"spawn turn out of range", with(loadgen.Request{SessionID: "c", Subagent: link("p", 3, -1)}),
			`request 4: subagent session "c": spawn turn 3 is not a turn of parent session "p" (turns 0..2)`},
		{"join turn out of range", with(loadgen.Request{SessionID: "c", Subagent: link("p", 0, 7)}),
			`request 4: subagent session "c": join turn 7 is not a turn of parent session "p"`},
		{"join before spawn", with(loadgen.Request{SessionID: "c", Subagent: link("p", 1, 1)}),
			`request 4: subagent session "c" joins before parent turn 1, which is not after its spawn turn 1`},
		{"below -1", with(loadgen.Request{SessionID: "c", Subagent: link("p", -2, -1)}), "must be >= -1"},
		{"own parent", with(loadgen.Request{SessionID: "c", Subagent: link("c", -1, -1)}), `"c" names itself as its parent`},
		{"cycle", with(
			loadgen.Request{SessionID: "x", Subagent: link("y", -1, -1)},
			loadgen.Request{SessionID: "y", Subagent: link("z", -1, -1)},
			loadgen.Request{SessionID: "z", Subagent: link("x", -1, -1)}),
			"request 4: subagent sessions form a cycle: x -> y -> z -> x"},
		{"no session", with(loadgen.Request{Subagent: link("p", 0, 1)}), "request 4: a subagent link needs a session id"},
		{"links disagree", with(
			loadgen.Request{SessionID: "c", Turn: 0, Subagent: link("p", 0, 1)},
			loadgen.Request{SessionID: "c", Turn: 1, Subagent: link("p", 0, 2)}),
			`request 5: session "c" has a subagent link`},
		{"mixed context modes", []loadgen.Request{{SessionID: "s", ContextMode: loadgen.ContextDeltas}, {SessionID: "s", Turn: 1}},
			`request 2: session "s" mixes context modes`},
		{"unknown context mode", []loadgen.Request{{ContextMode: "everything"}}, `request 1: context mode must be`},
		{"payload with deltas", []loadgen.Request{{ContextMode: loadgen.ContextDeltas, Payload: json.RawMessage(`{}`)}},
			"request 1: a payload is sent verbatim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadgen.Run(context.Background(), cfg, tt.schedule, &memSink{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("%d requests sent despite bad links", n)
	}
}

// sentBody is the body of the request with 1-based id in run "r".
func sentBody(t *testing.T, fake *fakeOpenAI, id int) map[string]any {
	t.Helper()
	req, ok := fake.byRequestID(fmt.Sprintf("r-%d", id))
	if !ok {
		t.Fatalf("request %d was not sent", id)
	}
	return req.Body
}

// messagesOf renders a body's chat messages as "role:content" strings.
func messagesOf(t *testing.T, body map[string]any) []string {
	t.Helper()
	raw, ok := body["messages"].([]any)
	if !ok {
		t.Fatalf("no messages in %v", body)
	}
	var out []string
	for _, m := range raw {
		msg := m.(map[string]any)
		out = append(out, fmt.Sprintf("%s:%s", msg["role"], msg["content"]))
	}
	return out
}

func TestDeltaContextSendsTheEarlierTurnsOnChat(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	cfg.RunID = "r"
	schedule := []loadgen.Request{
		{SessionID: "syn", Turn: 0, ContextMode: loadgen.ContextDeltas, InputTokens: 4, HashIDs: []int64{1, 2}, BlockSize: 2},
		{SessionID: "syn", Turn: 1, ContextMode: loadgen.ContextDeltas, InputTokens: 3},
		{SessionID: "syn", Turn: 2, ContextMode: loadgen.ContextDeltas, InputTokens: 2},
		{SessionID: "lit", Turn: 0, ContextMode: loadgen.ContextDeltas,
			Messages: json.RawMessage(`[{"role":"system","content":"S"}, {"role":"user","content":"A"}]`)},
		{SessionID: "lit", Turn: 1, ContextMode: loadgen.ContextDeltas, Messages: json.RawMessage(` [ {"role":"user","content":"B"} ] `)},
		{SessionID: "lit", Turn: 2, ContextMode: loadgen.ContextDeltas, Prompt: ptr("C")},
		// Self-contained turns are sent alone.
		{SessionID: "own", Turn: 0, Prompt: ptr("X")},
		{SessionID: "own", Turn: 1, Prompt: ptr("Y")},
	}
	recs, _ := run(t, cfg, schedule)

	syn := [][]string{messagesOf(t, sentBody(t, fake, 1)), messagesOf(t, sentBody(t, fake, 2)), messagesOf(t, sentBody(t, fake, 3))}
	for k, want := range []int{4, 3, 2} {
		if len(syn[k]) != k+1 {
			t.Fatalf("turn %d sent %d messages, want %d: %q", k, len(syn[k]), k+1, syn[k])
		}
		own := syn[k][k]
		if n := len(strings.Fields(strings.TrimPrefix(own, "user:"))); n != want || !strings.HasPrefix(own, "user:") {
			t.Errorf("turn %d's own message %q has %d words, want a user message of %d", k, own, n, want)
		}
		for j := 0; j < k; j++ {
			if syn[k][j] != syn[j][j] {
				t.Errorf("turn %d message %d = %q, want turn %d's own %q", k, j, syn[k][j], j, syn[j][j])
			}
		}
	}
	lit := [][]string{messagesOf(t, sentBody(t, fake, 4)), messagesOf(t, sentBody(t, fake, 5)), messagesOf(t, sentBody(t, fake, 6))}
	wantLit := [][]string{
		{"system:S", "user:A"},
		{"system:S", "user:A", "user:B"},
		{"system:S", "user:A", "user:B", "user:C"},
	}
	for k := range wantLit {
		if strings.Join(lit[k], "|") != strings.Join(wantLit[k], "|") {
			t.Errorf("literal turn %d sent %q, want %q", k, lit[k], wantLit[k])
		}
	}
	if got := messagesOf(t, sentBody(t, fake, 8)); strings.Join(got, "|") != "user:Y" {
		t.Errorf("self-contained turn 1 sent %q, want it alone", got)
	}

	r := bySessionTurn(recs)
	if got := r["syn/2"]; got.InputTokens != 9 || got.Metadata["turn_input_tokens"] != 2 {
		t.Errorf("turn 2 input tokens %v (metadata %v), want the context's 9 and its own 2", got.InputTokens, got.Metadata)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDeltaContextConcatenatesPromptsOnCompletions(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	cfg.API, cfg.RunID = loadgen.APICompletions, "r"
	schedule := []loadgen.Request{
		{SessionID: "a", Turn: 0, ContextMode: loadgen.ContextDeltas, InputTokens: 4, HashIDs: []int64{1, 2}, BlockSize: 2},
		{SessionID: "a", Turn: 1, ContextMode: loadgen.ContextDeltas, InputTokens: 3},
		{SessionID: "a", Turn: 2, ContextMode: loadgen.ContextDeltas, Prompt: ptr(" literal")},
		// Another session opening with the same hash ids: its context shares a's prefix.
		{SessionID: "b", Turn: 0, ContextMode: loadgen.ContextDeltas, InputTokens: 4, HashIDs: []int64{1, 2}, BlockSize: 2},
		{SessionID: "b", Turn: 1, ContextMode: loadgen.ContextDeltas, InputTokens: 5},
	}
	run(t, cfg, schedule)
	p := func(id int) string { return sentBody(t, fake, id)["prompt"].(string) }
	a0, a1, a2, b0, b1 := p(1), p(2), p(3), p(4), p(5)
	if len(strings.Fields(a0)) != 4 || len(strings.Fields(a1)) != 7 {
		t.Fatalf("prompt lengths %d and %d words, want 4 and 4+3", len(strings.Fields(a0)), len(strings.Fields(a1)))
	}
	if !strings.HasPrefix(a1, a0) {
		t.Errorf("turn 1 %q does not start with turn 0 %q", a1, a0)
	}
	if a2 != a1+" literal" {
		t.Errorf("turn 2 %q, want turn 1's context then its own literal prompt", a2)
	}
	if b0 != a0 || !strings.HasPrefix(b1, a0) || b1 == a1 {
		t.Errorf("sessions sharing hash ids must share the prefix and only it:\na1 %q\nb1 %q", a1, b1)
	}
}
