package weka_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/tests/tracefixture"
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/tracefmttest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka/wekatest"
)

func parse(t testing.TB, input string, chunk int) ([]abi.TraceRequest, error) {
	return tracefmttest.Parse(t, weka.New(), strings.NewReader(input), chunk)
}

func TestSubagents(t *testing.T) {
	b, err := os.ReadFile("testdata/subagents.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse(t, string(b), 100)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(got)
	want := `[` +
		`{"line":1,"session_id":"trace_x","turn_index":0,"arrival_ms":0,"recorded_ms":0,"input_tokens":130,"output_tokens":10,"hash_ids":[1,2],"block_size":64,"model":"big","context_mode":"message_array_with_responses","metadata":{"type":"n","stop":"tool_use","api_time":2.5,"think_time":0,"tool_tokens":100,"system_tokens":20}},` +
		`{"line":2,"session_id":"trace_x/agent_001","turn_index":0,"delay_ms":1000,"recorded_ms":11000,"input_tokens":64,"output_tokens":1,"hash_ids":[9],"block_size":64,"model":"small","context_mode":"message_array_with_responses","metadata":{"type":"n","api_time":1,"recorded_output_tokens":0,"tool_tokens":7,"system_tokens":3},"subagent":{"parent_session_id":"trace_x","agent_id":"agent_001","agent_type":"Explore","spawn_after_turn":0,"join_before_turn":1}},` +
		`{"line":3,"session_id":"trace_x/agent_001","turn_index":1,"delay_ms":2000,"recorded_ms":14000,"input_tokens":70,"output_tokens":5,"model":"small","context_mode":"message_array_with_responses","metadata":{"type":"s","ttft":0.25},"subagent":{"parent_session_id":"trace_x","agent_id":"agent_001","agent_type":"Explore","spawn_after_turn":0,"join_before_turn":1}},` +
		`{"line":4,"session_id":"trace_x","turn_index":1,"delay_ms":17500,"recorded_ms":20000,"input_tokens":200,"output_tokens":3,"model":"big","context_mode":"message_array_with_responses","metadata":{"type":"s","api_time":1,"ttft":0.5},"join_delay_ms":5000}]`
	if string(js) != want {
		t.Fatalf("records\n got %s\nwant %s", js, want)
	}
}

// parseWindowed parses input with the window [startS, endS) seconds (endS < 0: no end).
func parseWindowed(t *testing.T, input []byte, startS, endS float64) []abi.TraceRequest {
	t.Helper()
	var end *float64
	if endS >= 0 {
		e := endS * 1000
		end = &e
	}
	got, err := tracefmttest.Parse(t, weka.NewWindowed(startS*1000, end), strings.NewReader(string(input)), 97)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The generated agent traces come out with the recorded structure: the links the generator
// meant, recorded times, and the join gaps measured from the last joined subagent's end.
func TestGeneratedAgentTraces(t *testing.T) {
	traces := wekatest.Agents(2, 60)
	got := parseWindowed(t, wekatest.JSONL(traces), 0, -1)
	tr := traces[0]
	n := len(tr.Turns)
	for _, s := range tr.Subagents {
		n += len(s.Requests)
	}
	if len(got) != 2*n {
		t.Fatalf("%d records, want %d", len(got), 2*n)
	}
	bySession := map[string][]abi.TraceRequest{}
	for _, r := range got {
		bySession[r.SessionID] = append(bySession[r.SessionID], r)
	}
	parent := bySession[tr.ID]
	for k, turn := range tr.Turns {
		r := parent[k]
		if r.TurnIndex != k || r.RecordedMs != tracefmt.SecondsToMs(turn.T) || (k == 0) != (r.ArrivalMs != nil) {
			t.Fatalf("parent turn %d: %+v", k, r)
		}
	}
	lastEnd := map[int]float64{} // join turn -> latest end of the subagents it joins
	for _, s := range tr.Subagents {
		recs := bySession[tr.ID+"/"+s.ID]
		if len(recs) != len(s.Requests) {
			t.Fatalf("subagent %s: %d records", s.ID, len(recs))
		}
		join := s.AfterTurn + 1
		if s.Background {
			join = -1
		}
		if l := recs[0].Subagent; l == nil || l.SpawnAfterTurn != s.AfterTurn || l.JoinBeforeTurn != join {
			t.Fatalf("subagent %s link %+v, want spawn %d join %d", s.ID, l, s.AfterTurn, join)
		}
		if join >= 0 {
			lastEnd[join] = max(lastEnd[join], s.End())
		}
	}
	for k, r := range parent {
		end, joins := lastEnd[k]
		switch {
		case !joins && r.JoinDelayMs != nil:
			t.Errorf("turn %d joins nothing but has a join delay %v", k, *r.JoinDelayMs)
		case joins && (r.JoinDelayMs == nil || math.Abs(*r.JoinDelayMs-(tr.Turns[k].T-end)*1000) > 0.01):
			t.Errorf("turn %d join delay %v, want %.3f ms", k, r.JoinDelayMs, (tr.Turns[k].T-end)*1000)
		}
	}
}

// A range keeps the turns inside it on every trace's clock, the subagents of the kept turns that
// spawn them, and keeps every link pointing at a turn that is there.
func TestRangeSelectsTurnsAndKeepsLinksConsistent(t *testing.T) {
	traces := wekatest.Agents(1, 60)
	tr := traces[0]
	input := wekatest.JSONL(traces)
	sessions := func(recs []abi.TraceRequest) map[string][]abi.TraceRequest {
		out := map[string][]abi.TraceRequest{}
		for _, r := range recs {
			out[r.SessionID] = append(out[r.SessionID], r)
		}
		return out
	}
	turnsOf := func(recs []abi.TraceRequest) []int {
		var out []int
		for _, r := range recs {
			out = append(out, r.TurnIndex)
		}
		return out
	}

	// From between turns 1 and 2 to between turns 4 and 5: turns 2..4; the subagents of turn 1
	// and 5 are gone, agent_d (turn 3 -> 4) stays.
	start, end := (tr.Turns[1].T+tr.Turns[2].T)/2, (tr.Turns[4].T+tr.Turns[5].T)/2
	got := sessions(parseWindowed(t, input, start, end))
	if len(got) != 2 || fmt.Sprint(turnsOf(got[tr.ID])) != "[2 3 4]" || len(got[tr.ID+"/agent_d"]) != 2 {
		t.Fatalf("sessions %v, parent turns %v", len(got), turnsOf(got[tr.ID]))
	}
	first := got[tr.ID][0]
	if first.ArrivalMs == nil || *first.ArrivalMs != tracefmt.SecondsToMs(tr.Turns[2].T) || first.DelayMs != nil {
		t.Errorf("the first kept turn must be placed by its recorded t: %+v", first)
	}
	if l := got[tr.ID+"/agent_d"][0].Subagent; l.SpawnAfterTurn != 3 || l.JoinBeforeTurn != 4 {
		t.Errorf("agent_d link %+v", l)
	}

	// Ending between agent_a's two requests: agent_a keeps one, the joining turn 2 is out, so
	// the three subagents of turn 1 run in the background; turns 0 and 1 stay.
	end = (tr.Subagents[0].Requests[0].T + tr.Subagents[0].Requests[1].T) / 2
	got = sessions(parseWindowed(t, input, 0, end))
	if fmt.Sprint(turnsOf(got[tr.ID])) != "[0 1]" || len(got[tr.ID+"/agent_a"]) != 1 || len(got) != 2 {
		t.Fatalf("parent turns %v, agent_a %d records, %d sessions", turnsOf(got[tr.ID]), len(got[tr.ID+"/agent_a"]), len(got))
	}
	if l := got[tr.ID+"/agent_a"][0].Subagent; l.SpawnAfterTurn != 1 || l.JoinBeforeTurn != -1 {
		t.Errorf("agent_a link %+v, want spawned by 1 and in the background", l)
	}
	if got[tr.ID][1].JoinDelayMs != nil {
		t.Errorf("turn 1 joins nothing")
	}
}

func TestJSONLOfTraces(t *testing.T) {
	one := `{"id":"a","models":[],"block_size":64,"hash_id_scope":"local","requests":[{"t":0,"type":"n","model":"m","in":1,"out":1}]}`
	got, err := parse(t, one+"\n"+strings.Replace(one, `"a"`, `"b"`, 1)+"\n", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SessionID != "a" || got[1].SessionID != "b" || got[1].Line != 2 {
		t.Fatalf("got %+v", got)
	}
}

func TestBadTraces(t *testing.T) {
	req := `{"t":0,"type":"n","model":"m","in":1,"out":1}`
	trace := func(fields, reqs string) string {
		return `{"id":"tr","models":[],"block_size":64,"hash_id_scope":"local"` + fields + `,"requests":[` + reqs + `]}`
	}
	cases := map[string]struct{ input, want string }{
		"empty":         {"", "source holds no trace"},
		"global scope":  {strings.Replace(trace("", req), `"local"`, `"global"`, 1), `trace "tr": field "hash_id_scope": "global" is not supported`},
		"unknown key":   {trace(`,"colour":1`, req), `unknown field "colour"`},
		"request key":   {trace("", `{"t":0,"type":"n","model":"m","in":1,"out":1,"x":2}`), `trace "tr": request 1: json: unknown field "x"`},
		"missing in":    {trace("", `{"t":0,"type":"n","model":"m","out":1}`), `trace "tr": request 1: field "in": required`},
		"string out":    {trace("", `{"t":0,"type":"n","model":"m","in":1,"out":"1"}`), `trace "tr": request 1: field "out": expected int64, found a JSON string`},
		"bad type":      {trace("", req+`,{"t":1,"type":"x","in":1,"out":1}`), `trace "tr": request 2: field "type": "x"`},
		"missing t":     {trace("", `{"type":"n","model":"m","in":1,"out":1}`), `request 1: missing required field "t"`},
		"inner missing": {trace("", req+`,{"t":1,"type":"subagent","agent_id":"a1","status":"completed","models":[],"requests":[{"t":0,"type":"n"}]}`), `trace "tr": request 2 (subagent a1): request 1: field "in": required`},
		"block size":    {strings.Replace(trace("", req), `"block_size":64`, `"block_size":0`, 1), `field "block_size": must be an integer > 0`},
		"not json":      {"{", "trace 1: unexpected EOF"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parse(t, c.input, 7); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

var shared tracefixture.Shared

func TestMain(m *testing.M) { shared.Main(m, "wasm-modules/tracefmt/weka") }

// checkTraces parses every file and checks what every WEKA trace holds: hash ids that cover
// whole 64-token blocks and exactly one of arrival and delay per request. It returns the
// parent and subagent requests and the sessions.
func checkTraces(t *testing.T, files []string) (parents, children, sessions int) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range files {
		err := tracefmt.ParseFile(weka.New(), f, 32<<10, func(r *abi.TraceRequest) error {
			if len(r.HashIDs) != r.InputTokens/64 {
				t.Fatalf("%s line %d: %d hash ids for %d tokens", f, r.Line, len(r.HashIDs), r.InputTokens)
			}
			if (r.ArrivalMs == nil) == (r.DelayMs == nil) {
				t.Fatalf("%s line %d: exactly one of arrival and delay must be set", f, r.Line)
			}
			if r.Subagent != nil {
				children++
			} else {
				parents++
			}
			seen[r.SessionID] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return parents, children, len(seen)
}

// Generated WEKA traces (tests/tracefixture, the documented format): six traces of five
// requests, every other one with a subagent of two requests in a session of its own.
func TestGeneratedTraces(t *testing.T) {
	dir, total := tracefixture.WEKADir(t, 6, 5)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	parents, children, sessions := checkTraces(t, files)
	if parents != 30 || children != 6 || parents+children != total || sessions != 6+3 {
		t.Fatalf("got %d parent and %d subagent requests in %d sessions", parents, children, sessions)
	}
}

// The real WEKA traces: every file parses; counts match a count made with Python over the
// same files (1460 parent requests, 9 subagent markers, 110 subagent requests in 124 files).
func TestRealTraces(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(shared.Traces(t, "../../.."), "weka", "kv-cache-tester", "*.json"))
	parents, children, sessions := checkTraces(t, files)
	if len(files) != 124 || parents != 1460 || children != 110 || sessions != 124+9 {
		t.Fatalf("got %d parent and %d subagent requests in %d sessions of %d files", parents, children, sessions, len(files))
	}
}

func FuzzParse(f *testing.F) {
	b, _ := os.ReadFile("testdata/subagents.json")
	f.Add(b, 13)
	f.Fuzz(func(t *testing.T, input []byte, chunk int) {
		chunk = 1 + chunk&0xff
		got := tracefmttest.SameInChunks(t, func(in string, n int) ([]abi.TraceRequest, error) { return parse(t, in, n) }, input, chunk)
		for _, r := range got {
			if r.OutputTokens < 1 || !json.Valid(r.Metadata) {
				t.Fatalf("bad record %+v", r)
			}
		}
	})
}
