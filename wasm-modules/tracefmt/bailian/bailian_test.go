package bailian_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/bailian"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/tracefmttest"
)

func parse(t testing.TB, input string, chunk int) ([]abi.TraceRequest, error) {
	return tracefmttest.Parse(t, bailian.New(), strings.NewReader(input), chunk)
}

func TestConversations(t *testing.T) {
	b, err := os.ReadFile("testdata/conversations.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse(t, string(b), 11)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		session string
		turn    int
		arrival float64
		hashes  int
	}
	want := []row{{"0", 0, 0, 3}, {"55", 0, 2500, 1}, {"55", 1, 61114, 5}, {"55", 2, 70000, 0}, {"161", 0, 71000, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.SessionID != w.session || g.TurnIndex != w.turn || *g.ArrivalMs != w.arrival || len(g.HashIDs) != w.hashes ||
			g.ContextMode != abi.ContextModeSelfContain || (w.hashes > 0 && g.BlockSize != 16) {
			t.Errorf("record %d: %+v, want %+v", i, g, w)
		}
		if !json.Valid(g.Metadata) {
			t.Errorf("record %d: metadata %s is not JSON", i, g.Metadata)
		}
	}
	if string(got[0].Metadata) != `{"chat_id":0,"parent_chat_id":-1,"type":"thinking"}` {
		t.Errorf("metadata %s", got[0].Metadata)
	}
}

func TestBadRecords(t *testing.T) {
	ok := `{"chat_id": 1, "timestamp": 0, "input_length": 5, "output_length": 1}`
	cases := map[string]struct{ input, want string }{
		"missing timestamp": {`{"chat_id": 1, "input_length": 5, "output_length": 1}`, `line 1: missing required field "timestamp"`},
		"missing chat":      {`{"timestamp": 0, "input_length": 5, "output_length": 1}`, `line 1: missing required field "chat_id"`},
		"duplicate chat":    {ok + "\n" + ok, `line 2: field "chat_id": 1 repeats an earlier row`},
		"string tokens":     {`{"chat_id": 1, "timestamp": 0, "input_length": "5", "output_length": 1}`, `line 1: field "input_length": expected an integer`},
		"turn zero":         {`{"chat_id": 1, "timestamp": 0, "input_length": 5, "output_length": 1, "turn": 0}`, `line 1: field "turn": must be >= 1`},
		"unknown":           {`{"chat_id": 1, "timestamp": 0, "input_length": 5, "output_length": 1, "extra": 1}`, `line 1: unknown field "extra"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parse(t, c.input, 4); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	b, _ := os.ReadFile("testdata/conversations.jsonl")
	f.Add(b, 7)
	f.Fuzz(func(t *testing.T, input []byte, chunk int) {
		chunk = 1 + chunk&0xff
		whole := tracefmttest.SameInChunks(t, func(in string, n int) ([]abi.TraceRequest, error) { return parse(t, in, n) }, input, chunk)
		for _, r := range whole {
			if !json.Valid(r.Metadata) {
				t.Fatalf("metadata %q is not JSON", r.Metadata)
			}
		}
	})
}
