package analysis

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// engineLine is a record the way the load engine writes it, with inter-token gaps in metadata.
func engineLine(rng *rand.Rand, id int64) []byte {
	status := []*int{ptrTo(200), ptrTo(503), nil}[rng.IntN(3)]
	rec := loadgen.Record{
		RequestID: id, SessionID: "session-7", Turn: rng.IntN(4), StatusCode: status, Successful: status != nil && *status == 200,
		ScheduledAtSeconds: rng.Float64() * 3600, StartedAtSeconds: rng.Float64() * 3600, CompletedAtSeconds: 3600 + rng.ExpFloat64(),
		LatencyMs: rng.ExpFloat64() * 1000, InputTokens: float64(rng.IntN(8000)), OutputTokens: float64(rng.IntN(300)),
		Metadata: map[string]any{"x_request_id": "lensfn-ab12", "inter_token_ms": []float64{7.5, 1e-7, 12}, "nested": map[string]any{"a": []any{"}", "\"{", nil}}},
	}
	if rng.IntN(2) == 0 {
		rec.TTFTMs, rec.TPOTMs, rec.FirstTokenAtSeconds = ptrTo(rng.Float64()*100), ptrTo(rng.Float64()), ptrTo(rng.Float64())
	}
	if status == nil || *status != 200 {
		rec.Error = ptrTo(`Post "http://127.0.0.1:8000/v1/chat/completions": read: connection reset <peer>`)
	}
	line, _ := json.Marshal(rec)
	return line
}

func ptrTo[T any](v T) *T { return &v }

// TestScanRecordTakesEngineLines: the fast path applies to what the load engine writes (else the
// speed-up silently never happens) and agrees with encoding/json on it.
func TestScanRecordTakesEngineLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for id := range int64(2000) {
		line := engineLine(rng, id+1)
		var fast loadgen.Record
		if !scanRecord(line, &fast) {
			t.Fatalf("fast path refused an engine line: %s", line)
		}
		var slow recordWithoutMetadata
		if err := json.Unmarshal(line, &slow); err != nil || !reflect.DeepEqual(fast, slow.Record) {
			t.Fatalf("fast %+v\nslow %+v (%v)\nline %s", fast, slow.Record, err, line)
		}
	}
}

func TestScanRecordDefersToEncodingJSON(t *testing.T) {
	for _, line := range []string{
		`{"request_id":1,"request_id":2}`,      // repeated key: encoding/json's rules
		`{"Request_ID":1}`,                     // encoding/json matches keys ignoring case
		`{"request_id":1,"future":true}`,       // unknown key
		`{"req\u0075est_id":1}`,                // escaped key
		`{"error":"a` + "\x01" + `"}`,          // control character
		`{"error":"\x"}`,                       // bad escape
		`{"request_id":null}`,                  // null into a non-pointer
		`{"request_id":1.0}`,                   // not an integer
		`{"status_code":99999999999999999999}`, // overflow
		`{"latency_ms":1e999}`,                 // out of float range
		`{"latency_ms":01}`,                    // not JSON
		`{"latency_ms":-}`,                     // not JSON
		`{"latency_ms":.5}`,                    // not JSON
		`{"latency_ms":1.}`,                    // not JSON
		`{"latency_ms":1e}`,                    // not JSON
		`{"latency_ms":+1}`,                    // not JSON
		`{"latency_ms":Infinity}`,              // not JSON
		`{"successful":"true"}`,                // wrong type
		`{"metadata":[]}`,                      // metadata must be an object
		`{"metadata":{"a":[}`,                  // unbalanced
		`{"request_id":1} x`,                   // trailing data
		`{"request_id":1,}`,                    // trailing comma
		`{"request_id" 1}`,                     // missing colon
		`{"latency_ms":1,"latency_ms":1}`,      // repeated key
		`{"turn":9223372036854775808}`,         // overflow
		`{"session_id":"a` + "\t" + `b"}`,      // control character
	} {
		var rec loadgen.Record
		if scanRecord([]byte(line), &rec) {
			t.Errorf("fast path took %s", line)
		}
	}
	for _, line := range []string{`{}`, ` { "request_id" : 7 , "latency_ms" : -0.5e-3 } `, `{"metadata":null}`, `{"metadata":{"k":"\"}\\"}}`,
		`{"error":"Post \"http://127.0.0.1:8000/v1\": EOF"}`, `{"error":"caf\u00e9 \ud83d\ude00"}`, `{"session_id":"café"}`, "{\"error\":\"bad \xff utf-8\"}"} {
		var fast loadgen.Record
		if !scanRecord([]byte(line), &fast) {
			t.Errorf("fast path refused %s", line)
		}
		var slow recordWithoutMetadata
		if err := json.Unmarshal([]byte(line), &slow); err != nil || !reflect.DeepEqual(fast, slow.Record) {
			t.Errorf("%s: fast %+v, encoding/json %+v (%v)", line, fast, slow.Record, err)
		}
	}
}

// FuzzScanRecordMatchesEncodingJSON: whenever the fast path takes a valid JSON line, encoding/json
// decodes the same record; whenever encoding/json accepts a line the fast path takes, they agree.
func FuzzScanRecordMatchesEncodingJSON(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for id := range int64(20) {
		f.Add(engineLine(rng, id))
	}
	f.Add([]byte(`{"status_code":null,"ttft_ms":0,"tpot_ms":-0,"turn":-3,"metadata":{"a":"\\"}`))
	f.Add([]byte(`{"latency_ms":1E+2,"input_tokens":0.000001e-300,"output_tokens":123456789012345678901234567890}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast loadgen.Record
		took := scanRecord(line, &fast)
		var slow recordWithoutMetadata
		slowErr := json.Unmarshal(line, &slow)
		if took && slowErr == nil && !reflect.DeepEqual(fast, slow.Record) {
			t.Fatalf("line %q\nfast %+v\nslow %+v", line, fast, slow.Record)
		}
		if took && slowErr != nil && json.Valid(line) {
			t.Fatalf("fast path took %q, which encoding/json rejects: %v", line, slowErr)
		}
		if took {
			for _, v := range []float64{fast.LatencyMs, fast.InputTokens, fast.OutputTokens, fast.StartedAtSeconds} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("fast path produced %v from %q", v, line)
				}
			}
		}
	})
}

// TestScanRecordTakesTheEngineWriter: lines from the load engine's own JSONLWriter (which does
// not escape HTML) take the fast path, and the summary equals the one from full decoding.
func TestScanRecordTakesTheEngineWriter(t *testing.T) {
	var file bytes.Buffer
	writer := loadgen.NewJSONLWriter(&file)
	rng := rand.New(rand.NewPCG(8, 9))
	var want []loadgen.Record
	for id := range int64(500) {
		var rec loadgen.Record
		if err := json.Unmarshal(engineLine(rng, id+1), &rec); err != nil {
			t.Fatal(err)
		}
		rec.Metadata["x_request_id"] = "lensfn-<&>-" + strconv.FormatInt(id, 10)
		if err := writer.Record(rec); err != nil {
			t.Fatal(err)
		}
		rec.Metadata = nil
		want = append(want, rec)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	var got []loadgen.Record
	err := ReadRecordLines(bytes.NewReader(file.Bytes()), func(line []byte, rec loadgen.Record) error {
		var fast loadgen.Record
		if !scanRecord(line, &fast) {
			t.Fatalf("fast path refused the engine writer's line %s", line)
		}
		got = append(got, rec)
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("records differ from what was written (err %v)", err)
	}
}
