package analysis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// MaxRecordLineBytes bounds one line of per-request.jsonl, so a corrupt file without newlines
// cannot make a reader buffer it whole.
const MaxRecordLineBytes = 16 << 20

// ErrBadRecordLine marks a line of per-request.jsonl that is not one JSON record object.
var ErrBadRecordLine = errors.New("bad per-request record line")

// ReadRecords streams per-request.jsonl: each non-blank line is one loadgen.Record, handed to fn
// in file order before the next line is read. It stops at the first bad line (an error wrapping
// ErrBadRecordLine) or the first error fn returns; either error names the 1-based line.
// Unknown fields are ignored so that older readers accept newer records.
func ReadRecords(r io.Reader, fn func(loadgen.Record) error) error {
	reader := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than the reader's buffer, assembled from its pieces
	for lineNumber := 1; ; {
		chunk, readErr := reader.ReadSlice('\n')
		if errors.Is(readErr, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > MaxRecordLineBytes {
				return fmt.Errorf("%w: line %d: longer than %d bytes", ErrBadRecordLine, lineNumber, MaxRecordLineBytes)
			}
			long = append(long, chunk...)
			continue
		}
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return fmt.Errorf("reading per-request records at line %d: %w", lineNumber, readErr)
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > MaxRecordLineBytes {
			return fmt.Errorf("%w: line %d: longer than %d bytes", ErrBadRecordLine, lineNumber, MaxRecordLineBytes)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			rec, err := decodeRecord(trimmed)
			if err != nil {
				return fmt.Errorf("%w: line %d: %v", ErrBadRecordLine, lineNumber, err)
			}
			if err := fn(rec); err != nil {
				return fmt.Errorf("per-request record at line %d: %w", lineNumber, err)
			}
		}
		long = long[:0]
		if readErr != nil { // io.EOF
			return nil
		}
		lineNumber++
	}
}

func decodeRecord(line []byte) (loadgen.Record, error) {
	var rec loadgen.Record
	if line[0] != '{' {
		return rec, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		return rec, err
	}
	return rec, nil
}

// Summarize reads per-request.jsonl and returns its summary: ReadRecords into an Accumulator.
func Summarize(r io.Reader, opts Options) (Summary, error) {
	acc, err := New(opts)
	if err != nil {
		return Summary{}, err
	}
	if err := ReadRecords(r, acc.Add); err != nil {
		return Summary{}, err
	}
	return acc.Summary()
}
