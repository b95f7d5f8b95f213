package analysis_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/lensfn/lensfn/runtime/analysis"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

func TestReadRecords(t *testing.T) {
	good := `{"request_id":1,"status_code":200,"successful":true,"latency_ms":5}`
	for _, tc := range []struct {
		name    string
		input   string
		ids     []int64
		errLine string // "" for success
	}{
		{"empty input", "", nil, ""},
		{"blank lines are skipped, numbering counts them", "\n" + good + "\n\n" + strings.Replace(good, `"request_id":1`, `"request_id":2`, 1) + "\n", []int64{1, 2}, ""},
		{"no trailing newline", good, []int64{1}, ""},
		{"CRLF line ends", good + "\r\n" + good + "\r\n", []int64{1, 1}, ""},
		{"unknown fields are ignored", `{"request_id":3,"future_field":[1,2]}`, []int64{3}, ""},
		{"truncated last line names its line", good + "\n" + `{"request_id":2,"status_co`, []int64{1}, "line 2:"},
		{"wrong type names the field", good + "\n\n" + `{"request_id":"x"}`, []int64{1}, "line 3:"},
		{"an array is not a record", `[1,2]`, nil, "line 1: not a JSON object"},
		{"null is not a record", `null`, nil, "line 1: not a JSON object"},
		{"two objects on one line", good + good, nil, "line 1:"},
		{"NaN is not JSON", `{"latency_ms":NaN}`, nil, "line 1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []int64
			err := analysis.ReadRecords(strings.NewReader(tc.input), func(r loadgen.Record) error {
				ids = append(ids, r.RequestID)
				return nil
			})
			if tc.errLine == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.errLine != "" && (!errors.Is(err, analysis.ErrBadRecordLine) || !strings.Contains(err.Error(), tc.errLine)) {
				t.Fatalf("err = %v, want ErrBadRecordLine containing %q", err, tc.errLine)
			}
			if len(ids) != len(tc.ids) || (len(ids) > 0 && string(mustJSON(t, ids)) != string(mustJSON(t, tc.ids))) {
				t.Errorf("ids = %v, want %v", ids, tc.ids)
			}
		})
	}
}

func TestReadRecordsLongLines(t *testing.T) {
	// A record bigger than the reader's 64 KiB buffer still reads whole.
	rec := loadgen.Record{RequestID: 9, Metadata: map[string]any{"blob": strings.Repeat("x", 200<<10)}}
	line, _ := json.Marshal(rec)
	var got []loadgen.Record
	err := analysis.ReadRecords(iotest.HalfReader(bytes.NewReader(append(line, '\n'))), func(r loadgen.Record) error { got = append(got, r); return nil })
	if err != nil || len(got) != 1 || len(got[0].Metadata["blob"].(string)) != 200<<10 {
		t.Fatalf("long line: %v, %d records", err, len(got))
	}
	// A line past the cap is refused without buffering the rest of the stream.
	huge := io.MultiReader(strings.NewReader(`{"request_id":1}`+"\n"+`{"metadata":"`), neverEnding('y'))
	err = analysis.ReadRecords(huge, func(loadgen.Record) error { return nil })
	if !errors.Is(err, analysis.ErrBadRecordLine) || !strings.Contains(err.Error(), "line 2: longer than") {
		t.Fatalf("err = %v, want a too-long error on line 2", err)
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestReadRecordsCallbackErrorsNameTheLine(t *testing.T) {
	input := `{"request_id":1,"completed_at_seconds":1,"started_at_seconds":2}`
	acc, _ := analysis.New(analysis.Options{})
	err := analysis.ReadRecords(strings.NewReader("\n"+input), acc.Add)
	if !errors.Is(err, analysis.ErrInvalidRecord) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want ErrInvalidRecord at line 2", err)
	}
	_, err = analysis.Summarize(strings.NewReader(input), analysis.Options{})
	if !errors.Is(err, analysis.ErrInvalidRecord) {
		t.Fatalf("Summarize err = %v", err)
	}
	_, err = analysis.Summarize(iotest.ErrReader(io.ErrUnexpectedEOF), analysis.Options{})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error = %v, want it wrapped", err)
	}
}

// FuzzReadRecords: any input either reads or fails with a line-naming error, never panics, and
// what it reads summarises into valid JSON.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"request_id":1,"status_code":200,"successful":true,"latency_ms":5,"ttft_ms":1}` + "\n"))
	f.Add([]byte("\n\n{\"status_code\":null}\r\n{"))
	f.Add([]byte(`{"metadata":{"a":[1,{"b":null}]},"tpot_ms":1e308,"completed_at_seconds":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, input []byte) {
		acc, _ := analysis.New(analysis.Options{})
		lines := 0
		readErr := analysis.ReadRecords(bytes.NewReader(input), func(r loadgen.Record) error {
			lines++
			if addErr := acc.Add(r); addErr != nil && !errors.Is(addErr, analysis.ErrInvalidRecord) {
				t.Fatalf("Add returned an unmarked error: %v", addErr)
			}
			return nil
		})
		if readErr != nil && (!errors.Is(readErr, analysis.ErrBadRecordLine) || !strings.Contains(readErr.Error(), "line ")) {
			t.Fatalf("error %q is not a line-naming ErrBadRecordLine", readErr)
		}
		// Skipping metadata never rejects what the full decoder accepts, nor changes the rest.
		var full, lean []loadgen.Record
		fullErr := analysis.ReadRecords(bytes.NewReader(input), func(r loadgen.Record) error { r.Metadata = nil; full = append(full, r); return nil })
		leanErr := analysis.ReadRecordsWithoutMetadata(bytes.NewReader(input), func(r loadgen.Record) error { lean = append(lean, r); return nil })
		if fullErr == nil && (leanErr != nil || !reflect.DeepEqual(full, lean)) {
			t.Fatalf("without metadata: %v, %d records; with: %d records", leanErr, len(lean), len(full))
		}
		s, err := acc.Summary()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("summary is not JSON: %v", err)
		}
		if s.TotalRequests > int64(lines) {
			t.Fatalf("%d requests from %d lines", s.TotalRequests, lines)
		}
		unknown, _ := analysis.ParseStatusCodeFilter("unknown")
		page, err := analysis.ResponseCodeIssues(bytes.NewReader(input), unknown, 0, analysis.MaxIssueLimit)
		if err != nil && !errors.Is(err, analysis.ErrBadRecordLine) {
			t.Fatalf("issues error %q is not ErrBadRecordLine", err)
		}
		if readErr == nil && err != nil {
			t.Fatalf("the records read, but listing issues failed: %v", err)
		}
		if readErr == nil && page.Total > int64(lines) {
			t.Fatalf("%d issues from %d records", page.Total, lines)
		}
	})
}

func TestReadRecordsWithoutMetadata(t *testing.T) {
	line := `{"request_id":4,"status_code":503,"error":"x","latency_ms":2.5,"metadata":{"inter_token_ms":[1,2,3],"metadata":{"request_id":99}}}`
	var got []loadgen.Record
	err := analysis.ReadRecordsWithoutMetadata(strings.NewReader(line+"\n"+`{"request_id":5,"metadata":null}`), func(r loadgen.Record) error { got = append(got, r); return nil })
	if err != nil || len(got) != 2 || got[0].RequestID != 4 || *got[0].StatusCode != 503 || got[0].LatencyMs != 2.5 || got[0].Metadata != nil || got[1].RequestID != 5 {
		t.Fatalf("records %+v, err %v", got, err)
	}
	for _, broken := range []string{`{"request_id":1,"metadata":{"a":[1,2}`, `{"request_id":1,"metadata":{"a":"}}`, `{"request_id":1,"metadata":[]}`, `{"request_id":1,"metadata":{}`} {
		err = analysis.ReadRecordsWithoutMetadata(strings.NewReader(broken), func(loadgen.Record) error { return nil })
		if !errors.Is(err, analysis.ErrBadRecordLine) {
			t.Errorf("%s: err = %v, want ErrBadRecordLine", broken, err)
		}
	}
}

func TestReadRecordLinesHandsTheLineAsWritten(t *testing.T) {
	input := "  {\"request_id\":1,\"metadata\":{\"k\":[1,2]}}  \r\n\n{\"request_id\":2}\n"
	var lines []string
	var ids []int64
	err := analysis.ReadRecordLines(strings.NewReader(input), func(line []byte, rec loadgen.Record) error {
		lines, ids = append(lines, string(line)), append(ids, rec.RequestID)
		return nil
	})
	if err != nil || len(lines) != 2 || lines[0] != `{"request_id":1,"metadata":{"k":[1,2]}}` || lines[1] != `{"request_id":2}` || ids[1] != 2 {
		t.Fatalf("lines %q ids %v err %v", lines, ids, err)
	}
	stop := errors.New("enough")
	err = analysis.ReadRecordLines(strings.NewReader(input), func([]byte, loadgen.Record) error { return stop })
	if !errors.Is(err, stop) || errors.Is(err, analysis.ErrBadRecordLine) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("callback error = %v, want it wrapped with its line and not marked a bad line", err)
	}
}
