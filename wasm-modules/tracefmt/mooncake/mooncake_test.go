package mooncake_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/tests/tracefixture"
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/mooncake"
	"github.com/lensfn/lensfn/wasm-modules/tracefmt/tracefmttest"
)

// parse runs the core over input fed in chunks of chunk bytes and returns detached copies.
func parse(t testing.TB, input string, chunk int) ([]abi.TraceRequest, error) {
	return tracefmttest.Parse(t, mooncake.New(), strings.NewReader(input), chunk)
}

func TestHandWrittenSessions(t *testing.T) {
	b, err := os.ReadFile("testdata/sessions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse(t, string(b), 7)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(got)
	want := `[` +
		`{"line":1,"turn_index":0,"arrival_ms":0,"recorded_ms":0,"input_tokens":600,"output_tokens":20,"hash_ids":[7,8],"block_size":512,"context_mode":"deltas_without_responses"},` +
		`{"line":2,"session_id":"s1","turn_index":0,"arrival_ms":500,"recorded_ms":500,"input_tokens":0,"output_tokens":5,"prompt":"hello é\n","context_mode":"deltas_without_responses"},` +
		`{"line":4,"session_id":"s1","turn_index":1,"delay_ms":250,"recorded_ms":750,"input_tokens":0,"output_tokens":7,"messages":[{"role":"user","content":"next"}],"tools":[],"context_mode":"deltas_without_responses","metadata":{"message_mode":"delta"}},` +
		`{"line":5,"session_id":"42","turn_index":0,"arrival_ms":1000.5,"recorded_ms":1000.5,"input_tokens":0,"output_tokens":0,"payload":{"model":"m","prompt":"x"},"extra":{"ignore_eos":true},"context_mode":"deltas_without_responses"},` +
		`{"line":6,"session_id":"s1","turn_index":2,"recorded_ms":750,"input_tokens":3,"output_tokens":0,"context_mode":"deltas_without_responses"}]`
	if string(js) != want {
		t.Fatalf("records\n got %s\nwant %s", js, want)
	}
}

func TestBadRecordsNameLineAndField(t *testing.T) {
	cases := map[string]struct{ input, want string }{
		"string length":   {`{"timestamp":0,"input_length":"5"}`, `line 1: field "input_length": expected an integer`},
		"negative output": {"{\"input_length\":1}\n{\"input_length\":1,\"output_length\":-2}", `line 2: field "output_length": negative value -2`},
		"fractional":      {`{"input_length":1.5}`, `line 1: field "input_length": expected an integer`},
		"unknown field":   {`{"input_length":1,"inputlength":2}`, `line 1: unknown field "inputlength"`},
		"no input":        {`{"timestamp":3}`, `line 1: needs one of the fields`},
		"hashes alone":    {`{"text_input":"x","hash_ids":[1]}`, `line 1: field "hash_ids": only allowed together with "input_length"`},
		"bad hash":        {`{"input_length":1,"hash_ids":[1,"a"]}`, `line 1: field "hash_ids": element 1: expected an integer`},
		"truncated":       {`{"input_length":1`, `line 1: object not closed`},
		"trailing":        {`{"input_length":1} x`, `line 1: unexpected "x" after the JSON object`},
		"not object":      {`[1]`, `line 1: expected a JSON object`},
		"time travel":     {"{\"timestamp\":5,\"input_length\":1}\n{\"timestamp\":4,\"input_length\":1}", `line 2: field "timestamp": 4 is before the first request's timestamp 5`},
		"messages object": {`{"messages":{}}`, `line 1: field "messages": expected an array`},
		"bad raw":         {`{"messages":[1,]}`, `line 1: field "messages":`},
		"bad mode":        {`{"messages":[],"message_mode":"x"}`, `line 1: field "message_mode": must be`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, c.input, 3)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

var shared tracefixture.Shared

func TestMain(m *testing.M) { shared.Main(m, "wasm-modules/tracefmt/mooncake") }

const repoRoot = "../../.."

// checkConversationTrace parses path and checks what every mooncake trace holds: arrivals
// that never go back, 512-token blocks and ceil(input/512) hash ids. It returns the number
// of records and the last arrival.
func checkConversationTrace(t *testing.T, path string) (int, float64) {
	t.Helper()
	n, last := 0, 0.0
	err := tracefmt.ParseFile(mooncake.New(), path, 64<<10, func(r *abi.TraceRequest) error {
		n++
		if r.ArrivalMs == nil || *r.ArrivalMs < last {
			t.Fatalf("line %d: arrival %v not monotonic after %v", r.Line, r.ArrivalMs, last)
		}
		last = *r.ArrivalMs
		if want := (r.InputTokens + 511) / 512; len(r.HashIDs) != want || r.BlockSize != 512 {
			t.Fatalf("line %d: %d hash ids (block %d) for %d tokens", r.Line, len(r.HashIDs), r.BlockSize, r.InputTokens)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, last
}

// A generated conversation trace (tests/tracefixture, the documented format) parses whole.
func TestGeneratedConversationTrace(t *testing.T) {
	rows := tracefixture.Mooncake(3000, 600000, 3)
	n, last := checkConversationTrace(t, tracefixture.WriteFile(t, "conversation_trace.jsonl", tracefixture.MooncakeJSONL(rows)))
	if n != len(rows) || last != float64(rows[len(rows)-1].TimestampMs) {
		t.Fatalf("got %d records ending at %v ms, want %d ending at %d", n, last, len(rows), rows[len(rows)-1].TimestampMs)
	}
}

// The real Mooncake conversation trace: 12,031 requests over ~1 hour, every line with
// 512-token blocks and ceil(input/512) hash ids (checked in traces/SOURCES.md).
func TestRealConversationTrace(t *testing.T) {
	path := filepath.Join(shared.Traces(t, repoRoot), "mooncake", "conversation_trace.jsonl")
	if n, last := checkConversationTrace(t, path); n != 12031 || last != 3536999 {
		t.Fatalf("got %d records ending at %v ms, want 12031 ending at 3536999", n, last)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}`), 5)
	f.Add([]byte("{\"session_id\":\"a\",\"delay\":1,\"messages\":[{\"role\":\"user\"}]}\n{\"text_input\":\"\\ud83d\\ude00\"}"), 1)
	f.Fuzz(func(t *testing.T, input []byte, chunk int) {
		if chunk <= 0 || chunk > 1<<16 {
			chunk = 1 + chunk&0xff
		}
		tracefmttest.SameInChunks(t, func(in string, n int) ([]abi.TraceRequest, error) { return parse(t, in, n) }, input, chunk)
	})
}

// BenchmarkRealConversationTrace parses the real trace from memory with a no-op emit. Run it
// natively and as a wasip1 test binary (GOOS=wasip1 GOARCH=wasm, GOWASIRUNTIME=wazero) to see
// the core's own native-to-guest ratio without the host's share.
func BenchmarkRealConversationTrace(b *testing.B) {
	data := benchmarkTrace(b)
	lines := bytes.Count(data, []byte{'\n'})
	emit := func(*abi.TraceRequest) error { return nil }
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		p := mooncake.New()
		for off := 0; off < len(data); off += 256 << 10 {
			if err := p.Feed(data[off:min(off+256<<10, len(data))], emit); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.End(emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// benchmarkTrace is the real conversation trace, or, without it, a generated one of its size
// (the benchmark then says so in one line rather than skipping).
func benchmarkTrace(b *testing.B) []byte {
	dir, err := tracefixture.TracesDir(repoRoot)
	if err == nil {
		var data []byte
		if data, err = os.ReadFile(filepath.Join(dir, "mooncake", "conversation_trace.jsonl")); err == nil {
			return data
		}
	}
	b.Logf("real trace not available (%v): benchmarking a generated trace of 12,031 requests", err)
	return tracefixture.MooncakeJSONL(tracefixture.Mooncake(12031, 3536999, 1))
}
