package burstgpt_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/burstgpt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/tracefmttest"
)

func parse(t testing.TB, input string, chunk int) ([]abi.TraceRequest, error) {
	return tracefmttest.Parse(t, burstgpt.New(), strings.NewReader(input), chunk)
}

func TestRows(t *testing.T) {
	b, err := os.ReadFile("testdata/burstgpt.csv")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse(t, string(b), 9)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(got)
	want := `[{"line":2,"turn_index":0,"arrival_ms":0,"recorded_ms":0,"input_tokens":472,"output_tokens":18,"model":"ChatGPT","context_mode":"message_array_with_responses","metadata":{"timestamp_s":5,"log_type":"Conversation log"}},` +
		`{"line":3,"turn_index":0,"arrival_ms":40000,"recorded_ms":40000,"input_tokens":1087,"output_tokens":230,"model":"ChatGPT","context_mode":"message_array_with_responses","metadata":{"timestamp_s":45,"log_type":"Conversation log"}},` +
		`{"line":4,"turn_index":0,"arrival_ms":40000,"recorded_ms":40000,"input_tokens":20,"output_tokens":1,"model":"GPT-4","context_mode":"message_array_with_responses","metadata":{"timestamp_s":45,"log_type":"API \"log\"","recorded_output_tokens":0}}]`
	if string(js) != want {
		t.Fatalf("records\n got %s\nwant %s", js, want)
	}
}

func TestBadRows(t *testing.T) {
	const header = "Timestamp,Request tokens,Response tokens\n"
	cases := map[string]struct{ input, want string }{
		"no header column": {"Time,Request tokens,Response tokens\n1,2,3", `line 1: header has no "Timestamp" column`},
		"empty file":       {"", "line 1: missing the header row"},
		"bad timestamp":    {header + "x,1,2", `line 2: column "Timestamp": "x" is not a number`},
		"bad tokens":       {header + "1,1.5,2", `line 2: column "Request tokens": "1.5" is not a whole number`},
		"negative tokens":  {header + "1,1,-2", `line 2: column "Response tokens": -2 tokens is out of range`},
		"field count":      {header + "1,1", `line 2: 2 fields, the header has 3`},
		"open quote":       {header + `1,"1,2`, `line 2: field 2: quote not closed`},
		"time travel":      {header + "5,1,1\n4,1,1", `line 3: column "Timestamp": 4 is before the first row's timestamp 5`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parse(t, c.input, 5); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	b, _ := os.ReadFile("testdata/burstgpt.csv")
	f.Add(b, 3)
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
