package loadgen

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func readAllEvents(t testing.TB, input string, maxLine int) ([]string, error) {
	r := newSSEReader(strings.NewReader(input), maxLine)
	var out []string
	for {
		data, err := r.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(data))
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"openai chunks", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"crlf and cr endings", "data: x\r\n\r\ndata: y\r\rdata:z\n\n", []string{"x", "y", "z"}},
		{"comments and other fields", ": keep-alive\nevent: message\nid: 3\nretry: 10\ndata: v\n\n", []string{"v"}},
		{"multi-line data joined", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"only one leading space dropped", "data:  two\n\n", []string{" two"}},
		{"final event without blank line", "data: last", []string{"last"}},
		{"empty events skipped", "\n\n\nevent: ping\n\ndata: x\n\n", []string{"x"}},
		{"empty data is an event", "data:\n\n", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAllEvents(t, tt.input, 1<<10)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := readAllEvents(t, "data: "+strings.Repeat("x", 100)+"\n\n", 50); err != errSSELineTooLong {
		t.Fatalf("long line: err %v", err)
	}
}

// FuzzSSEReader: any input parses without panicking or exceeding the line limit, and events
// written in the canonical form come back exactly.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: [DONE]\n\n"), "a\x00b")
	f.Add([]byte("data:x\r\r\n:c\nid:1\n\ndata"), "")
	f.Add([]byte("\r\n\r\ndata: y\r"), "z")
	f.Fuzz(func(t *testing.T, raw []byte, payload string) {
		events, err := readAllEvents(t, string(raw), 256)
		if err != nil && err != errSSELineTooLong {
			t.Fatalf("unexpected error %v", err)
		}
		for _, e := range events {
			for _, line := range strings.Split(e, "\n") {
				if len(line) > 256 {
					t.Fatalf("line of %d bytes passed a 256-byte limit", len(line))
				}
			}
		}
		// Round trip: one data line per payload line.
		if strings.ContainsAny(payload, "\r") || len(payload) > 200 {
			return
		}
		var buf bytes.Buffer
		for _, line := range strings.Split(payload, "\n") {
			buf.WriteString("data: " + line + "\n")
		}
		buf.WriteString("\n")
		got, err := readAllEvents(t, buf.String(), 256)
		if err != nil || len(got) != 1 || got[0] != payload {
			t.Fatalf("round trip of %q gave %q, %v", payload, got, err)
		}
	})
}

// readLineByteWise is the plain byte-at-a-time reading of SSE lines, the reference the
// buffered readLine is fuzzed against.
func readLinesByteWise(input []byte, maxLine int) (lines []string, err error) {
	var cur []byte
	pendingCR := false
	for _, b := range input {
		if pendingCR {
			pendingCR = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n', '\r':
			lines = append(lines, string(cur))
			cur = cur[:0]
			pendingCR = b == '\r'
			continue
		}
		if len(cur) >= maxLine {
			return lines, errSSELineTooLong
		}
		cur = append(cur, b)
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines, io.EOF
}

// smallReads hands out at most n bytes per Read, so lines span buffer refills.
type smallReads struct {
	data []byte
	n    int
}

func (r *smallReads) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

func FuzzSSELines(f *testing.F) {
	f.Add([]byte("data: a\r\n\r\ndata: b\rdata: c\n"), uint8(3), uint8(8))
	f.Add([]byte("\r\r\n\n\rx"), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, input []byte, chunk, maxLine uint8) {
		want, wantErr := readLinesByteWise(input, int(maxLine))
		r := newSSEReader(&smallReads{data: input, n: int(chunk%16) + 1}, int(maxLine))
		var got []string
		var err error
		for {
			var line []byte
			if line, err = r.readLine(); err != nil {
				break
			}
			got = append(got, string(line))
		}
		if err != wantErr || strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("got %q, %v; want %q, %v", got, err, want, wantErr)
		}
	})
}
