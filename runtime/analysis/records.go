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
	return readLines(r, func(line []byte) error {
		rec, err := decodeRecord(line)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return callbackError{err}
		}
		return nil
	})
}

// ReadRecordsWithoutMetadata is ReadRecords for readers that do not need Record.Metadata (the
// summary, the issues listing): it leaves Metadata nil and skips over each line's metadata
// object without building it. The load engine's metadata can carry every inter-token gap, so
// this is an order of magnitude faster on real artifacts. The metadata's nesting and strings
// must be well formed; its other tokens are not checked.
func ReadRecordsWithoutMetadata(r io.Reader, fn func(loadgen.Record) error) error {
	return ReadRecordLines(r, func(_ []byte, rec loadgen.Record) error { return fn(rec) })
}

// ReadRecordLines is ReadRecordsWithoutMetadata that also hands fn each record's line as
// written (trimmed; valid only during the call, so clone what you keep), for a caller that
// keeps a few rows verbatim, metadata included, while it summarises them all.
func ReadRecordLines(r io.Reader, fn func(line []byte, rec loadgen.Record) error) error {
	return readLines(r, func(line []byte) error {
		rec, err := decodeRecordWithoutMetadata(line)
		if err != nil {
			return err
		}
		if err := fn(line, rec); err != nil {
			return callbackError{err}
		}
		return nil
	})
}

// callbackError carries an error of the caller's callback through readLines, which names the
// line of either kind but marks only its own decoding errors as ErrBadRecordLine.
type callbackError struct{ error }

func (e callbackError) Unwrap() error { return e.error }

// readLines hands each non-blank line of r, trimmed, to fn; the slice is valid only during the
// call.
func readLines(r io.Reader, fn func(line []byte) error) error {
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
			if err := fn(trimmed); err != nil {
				var callback callbackError
				if errors.As(err, &callback) {
					return fmt.Errorf("per-request record at line %d: %w", lineNumber, callback.error)
				}
				return fmt.Errorf("%w: line %d: %v", ErrBadRecordLine, lineNumber, err)
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
		return rec, errNotAnObject
	}
	err := json.Unmarshal(line, &rec)
	return rec, err
}

var errNotAnObject = errors.New("not a JSON object")

// recordWithoutMetadata decodes a record line but its metadata: the outer field, being less
// deeply nested, takes the "metadata" key from loadgen.Record's.
type recordWithoutMetadata struct {
	loadgen.Record
	Metadata skippedMetadata `json:"metadata"`
}

// skippedMetadata accepts an object or null, as Record.Metadata would (encoding/json has already
// checked its syntax), and keeps nothing of it.
type skippedMetadata struct{}

func (*skippedMetadata) UnmarshalJSON(raw []byte) error {
	if raw[0] != '{' && string(raw) != "null" {
		return errors.New("metadata must be a JSON object or null")
	}
	return nil
}

func decodeRecordWithoutMetadata(line []byte) (loadgen.Record, error) {
	var fast loadgen.Record
	if scanRecord(line, &fast) {
		return fast, nil
	}
	var rec recordWithoutMetadata
	if line[0] != '{' {
		return rec.Record, errNotAnObject
	}
	err := json.Unmarshal(line, &rec)
	return rec.Record, err
}

// Summarize reads per-request.jsonl and returns its summary: ReadRecordsWithoutMetadata into an
// Accumulator.
func Summarize(r io.Reader, opts Options) (Summary, error) {
	acc, err := New(opts)
	if err != nil {
		return Summary{}, err
	}
	if err := ReadRecordsWithoutMetadata(r, acc.Add); err != nil {
		return Summary{}, err
	}
	return acc.Summary()
}
