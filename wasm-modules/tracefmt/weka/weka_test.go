package weka_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/tracefmttest"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/weka"
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
		`{"line":4,"session_id":"trace_x","turn_index":1,"delay_ms":17500,"recorded_ms":20000,"input_tokens":200,"output_tokens":3,"model":"big","context_mode":"message_array_with_responses","metadata":{"type":"s","api_time":1,"ttft":0.5}}]`
	if string(js) != want {
		t.Fatalf("records\n got %s\nwant %s", js, want)
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

// The real WEKA traces: every file parses; hash ids cover whole 64-token blocks; counts
// match a count made with Python over the same files (1460 parent requests, 9 subagent
// markers, 110 subagent requests in 124 files).
func TestRealTraces(t *testing.T) {
	files, _ := filepath.Glob("../../../../shared/traces/weka/kv-cache-tester/*.json")
	if len(files) == 0 {
		t.Skip("real WEKA traces not available")
	}
	parents, children, sessions := 0, 0, map[string]bool{}
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
			sessions[r.SessionID] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) == 124 && (parents != 1460 || children != 110 || len(sessions) != 124+9) {
		t.Fatalf("got %d parent and %d subagent requests in %d sessions", parents, children, len(sessions))
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
