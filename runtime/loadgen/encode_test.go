package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

func ptrTo[T any](v T) *T { return &v }

// The hand-written body is byte for byte what encoding/json builds, for every shape it takes,
// and it takes the shapes the runner and the replayer send most.
func TestPlainBodyMatchesEncodingJSON(t *testing.T) {
	requests := map[string]Request{
		"fresh":              {InputTokens: 24, OutputTokens: 16},
		"no limit":           {InputTokens: 5},
		"hash blocks":        {InputTokens: 40, OutputTokens: 3, HashIDs: []int64{7, 8}, BlockSize: 16},
		"system prompt":      {InputTokens: 40, OutputTokens: 3, HashIDs: []int64{7}, BlockSize: 32, SystemPromptTokens: 32},
		"all system":         {InputTokens: 32, OutputTokens: 3, HashIDs: []int64{7}, BlockSize: 32, SystemPromptTokens: 32},
		"literal":            {Prompt: ptrTo("hello there, model"), OutputTokens: 2},
		"literal with quote": {Prompt: ptrTo(`say "hi" <b> & \ é`), OutputTokens: 2},
		"empty":              {},
	}
	fast := map[string]bool{"fresh": true, "no limit": true, "hash blocks": true, "system prompt": true, "all system": true, "literal": true,
		"literal with quote": true, "empty": true}
	for _, api := range []API{APICompletions, APIChat} {
		for _, stream := range []bool{true, false} {
			for _, ignoreEOS := range []bool{true, false} {
				for _, model := range []string{"sim", "a&b<model>"} {
					e := &engine{cfg: Config{API: api, Stream: stream, IgnoreEOS: ignoreEOS, Model: model}, synth: newSynth(3, 1<<20)}
					for name, r := range requests {
						label := fmt.Sprintf("%s/%s stream=%v eos=%v model=%q", name, api, stream, ignoreEOS, model)
						want, _, err := e.mappedBody(&r, 4, nil)
						if err != nil {
							t.Fatal(err)
						}
						got, ok := e.plainBody(&r, 4)
						if wantFast := fast[name]; ok != wantFast {
							t.Fatalf("%s: fast path taken %v, want %v", label, ok, wantFast)
						}
						if ok && !bytes.Equal(got, want) {
							t.Fatalf("%s:\n got %s\nwant %s", label, got, want)
						}
						viaBody, _, _ := e.body(&r, 4, nil)
						if !bytes.Equal(viaBody, want) {
							t.Fatalf("%s: body() gave\n%s\nwant %s", label, viaBody, want)
						}
					}
				}
			}
		}
	}
	// Shapes the fast path leaves to encoding/json.
	e := &engine{cfg: Config{API: APIChat, Model: "sim"}, synth: newSynth(3, 1<<20)}
	for name, r := range map[string]Request{
		"payload":  {Payload: json.RawMessage(`{"x":1}`)},
		"extra":    {InputTokens: 3, Extra: json.RawMessage(`{"x":1}`)},
		"messages": {Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`)},
		"tools":    {InputTokens: 3, Tools: json.RawMessage(`[]`)},
		"deltas":   {InputTokens: 3, ContextMode: ContextDeltas},
	} {
		if _, ok := e.plainBody(&r, 0); ok {
			t.Fatalf("%s: took the fast path", name)
		}
	}
}

// Every record line is byte for byte a json.Encoder's (SetEscapeHTML(false)), whether the fast
// encoder wrote it or left it to encoding/json.
func TestRecordLinesMatchEncodingJSON(t *testing.T) {
	status := 200
	errText := "HTTP 500: upstream said \"no\"\n"
	plainErr := "transport: connection refused"
	floats := []float64{0, 1, -0.5, 123.456789, 1e-6, 9.99e-7, 1e-7, 5e-324, 1e20, 1e21, 1.5e300, math.MaxFloat64, -1e-9, 0.1 + 0.2}
	var records []Record
	for k, f := range floats {
		records = append(records, Record{RequestID: int64(k + 1), Turn: k, StatusCode: &status, Successful: true,
			ScheduledAtSeconds: f, StartedAtSeconds: f / 3, CompletedAtSeconds: f + 1, LatencyMs: f, TTFTMs: &f, TPOTMs: ptrTo(f / 7),
			FirstTokenAtSeconds: ptrTo(-f), InputTokens: float64(k), OutputTokens: f,
			Metadata: map[string]any{"x_request_id": fmt.Sprintf("run-%d", k), "stage": k, "group": int64(k), "f": f, "b": k%2 == 0,
				"nil": nil, "gaps": []float64{f, 2, 3.25}, "empty": []float64{}, "none": []float64(nil)}})
	}
	records = append(records,
		Record{RequestID: 99, SessionID: "s-1", Error: &plainErr, TimelineDriftMs: ptrTo(-2.5), Metadata: map[string]any{}},
		Record{RequestID: 100, Metadata: nil},
		Record{RequestID: 101, Error: &errText, Metadata: map[string]any{"k": 1}},                      // escapes
		Record{RequestID: 102, SessionID: "sess<&>", Metadata: map[string]any{"k": "é"}},               // HTML and UTF-8
		Record{RequestID: 103, Metadata: map[string]any{"recorded": map[string]any{"a": 1}, "u": 1.5}}, // other types
		Record{RequestID: 104, Metadata: map[string]any{"k\"ey": 1}},
		Record{RequestID: 105, SessionID: "\x01\b\f\u2028 bad\xff", Error: ptrTo("\t<tab>\\"), Metadata: map[string]any{"v": "\u00e9\x00"}},
	)
	fast := 0
	for _, r := range records {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if got, ok := appendRecordLine(nil, &r); ok {
			fast++
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("record %d:\n got %s\nwant %s", r.RequestID, got, want.Bytes())
			}
		}
		var through bytes.Buffer
		w := NewJSONLWriter(&through)
		if err := w.Record(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(through.Bytes(), want.Bytes()) {
			t.Fatalf("record %d through the writer:\n got %s\nwant %s", r.RequestID, through.Bytes(), want.Bytes())
		}
	}
	// Only the record with a map in its metadata, and NaN below, are left to encoding/json.
	if fast != len(records)-1 {
		t.Fatalf("%d records took the fast encoder, want %d", fast, len(records)-1)
	}
	// NaN is refused as encoding/json refuses it.
	nan := Record{LatencyMs: math.NaN()}
	if _, ok := appendRecordLine(nil, &nan); ok {
		t.Fatal("a NaN latency was encoded")
	}
	if err := NewJSONLWriter(&bytes.Buffer{}).Record(nan); err == nil {
		t.Fatal("the writer took a NaN latency")
	}
}

// A request's body and its record line cost next to no allocations: at thousands of requests a
// second their garbage sets the collector's pace, and collections show up in the schedule
// delay's tail.
func TestBodyAndRecordLineAllocations(t *testing.T) {
	e := &engine{cfg: Config{API: APICompletions, Stream: true, IgnoreEOS: true, Model: "sim"}, synth: newSynth(3, 1<<20)}
	r := Request{InputTokens: 64, OutputTokens: 16, HashIDs: []int64{1}, BlockSize: 48}
	e.body(&r, 1, nil) // the block's text is cached from here on
	if n := testing.AllocsPerRun(200, func() { e.body(&r, 1, nil) }); n > 1 {
		t.Fatalf("a body costs %.1f allocations, want 1 (the body itself)", n)
	}
	chat := &engine{cfg: Config{API: APIChat, Stream: true, Model: "sim"}, synth: newSynth(3, 1<<20)}
	r.SystemPromptTokens = 48
	chat.body(&r, 1, nil)
	if n := testing.AllocsPerRun(200, func() { chat.body(&r, 1, nil) }); n > 1 {
		t.Fatalf("a chat body costs %.1f allocations, want 1", n)
	}
	status, ttft := 200, 12.5
	rec := Record{RequestID: 7, StatusCode: &status, Successful: true, TTFTMs: &ttft, TPOTMs: &ttft, FirstTokenAtSeconds: &ttft,
		Metadata: map[string]any{"x_request_id": "run-7", "stage": 0, "phase": "matrix-0", "worker": 0, "requested_output_tokens": 16,
			"output_tokens_source": "usage", "cached_tokens": 48}}
	w := NewJSONLWriter(&bytes.Buffer{})
	if n := testing.AllocsPerRun(200, func() { _ = w.Record(rec) }); n > 0 {
		t.Fatalf("a record line costs %.1f allocations, want 0", n)
	}
}

// Whatever a literal prompt, a model name, a session id or a metadata string holds, the
// hand-written body and record line are encoding/json's bytes.
func FuzzBodyAndRecordLineMatchEncodingJSON(f *testing.F) {
	f.Add("hello", "sim", "s-1", "v")
	f.Add(`say "hi" <b> & \ é`, "a&b<model>", "\x01\u2028", "bad\xff")
	f.Fuzz(func(t *testing.T, prompt, model, session, value string) {
		for _, api := range []API{APICompletions, APIChat} {
			e := &engine{cfg: Config{API: api, Stream: true, Model: model}, synth: newSynth(3, 1<<20)}
			r := Request{Prompt: &prompt, OutputTokens: 2}
			want, _, err := e.mappedBody(&r, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := e.plainBody(&r, 1); !ok || !bytes.Equal(got, want) {
				t.Fatalf("%s body (fast path %v):\n got %s\nwant %s", api, ok, got, want)
			}
		}
		rec := Record{RequestID: 1, SessionID: session, Error: &value, Metadata: map[string]any{value: session, "x_request_id": prompt}}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
		if got, ok := appendRecordLine(nil, &rec); !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("record line (fast path %v):\n got %s\nwant %s", ok, got, want.Bytes())
		}
	})
}
