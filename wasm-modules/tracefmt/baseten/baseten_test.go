package baseten_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/baseten"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/tracefmttest"
)

func parse(t testing.TB, input []byte, chunk int) ([]abi.TraceRequest, error) {
	return tracefmttest.Parse(t, baseten.New(), bytes.NewReader(input), chunk)
}

func encode(tb testing.TB, rows []baseten.SampleRow) []byte {
	b, err := baseten.EncodeSample(rows)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestSample(t *testing.T) {
	got, err := parse(t, encode(t, baseten.Sample()), 100)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(got)
	want := `[` +
		`{"line":3,"turn_index":0,"arrival_ms":0,"recorded_ms":0,"input_tokens":10,"output_tokens":5,"prompt":"earliest","context_mode":"message_array_with_responses","metadata":{"timestamp_start_unix_ms":1767225600000}},` +
		`{"line":1,"session_id":"sess-42","turn_index":0,"arrival_ms":123,"recorded_ms":123,"input_tokens":1834,"output_tokens":212,"hash_ids":[9811,9812,9813],"block_size":512,"prompt":"You are a helpful assistant.\nUser: hi","context_mode":"message_array_with_responses","metadata":{"timestamp_start_unix_ms":1767225600123,"duration_e2e_ms":2310,"request_canceled":0}},` +
		`{"line":4,"session_id":"s2","turn_index":0,"arrival_ms":1000,"recorded_ms":1000,"input_tokens":20,"output_tokens":7,"prompt":"other session ünïcode","context_mode":"message_array_with_responses","metadata":{"timestamp_start_unix_ms":1767225601000}},` +
		`{"line":2,"session_id":"sess-42","turn_index":1,"arrival_ms":3000,"recorded_ms":3000,"input_tokens":2100,"output_tokens":1,"hash_ids":[9811,9812,9813,9814],"block_size":512,"prompt":"second turn","context_mode":"message_array_with_responses","metadata":{"timestamp_start_unix_ms":1767225603000,"request_canceled":1,"recorded_output_tokens":0}}]`
	if string(js) != want {
		t.Fatalf("records\n got %s\nwant %s", js, want)
	}
}

func TestBadFiles(t *testing.T) {
	type noPrompt struct {
		TimestampStartUnixMs int64 `parquet:"timestamp_start_unix_ms"`
		InputTokens          int64 `parquet:"input_tokens"`
		OutputTokens         int64 `parquet:"output_tokens"`
	}
	var missing bytes.Buffer
	w := parquet.NewGenericWriter[noPrompt](&missing)
	w.Write([]noPrompt{{1, 2, 3}})
	w.Close()
	negative := baseten.Sample()
	negative[2].InputTokens = -4
	cases := map[string]struct {
		input []byte
		want  string
	}{
		"not parquet":     {[]byte("timestamp,prompt\n1,x\n"), "not a readable Parquet file"},
		"empty":           {nil, "empty source"},
		"missing column":  {missing.Bytes(), `required column "prompt" is missing`},
		"negative tokens": {encode(t, negative), `row 3: column "input_tokens": negative value -4`},
		"no rows":         {encode(t, nil), "no rows"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parse(t, c.input, 64); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(encode(f, baseten.Sample()))
	f.Fuzz(func(t *testing.T, input []byte) {
		got, err := parse(t, input, 1<<16)
		if err != nil {
			return
		}
		for _, r := range got {
			if r.ArrivalMs == nil || *r.ArrivalMs < 0 || r.OutputTokens < 1 || !json.Valid(r.Metadata) {
				t.Fatalf("bad record %+v", r)
			}
		}
	})
}
