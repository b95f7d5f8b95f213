package tracefmt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

// Emit receives one normalised record. The record and its slices may be reused by the
// parser after Emit returns, so a caller that keeps it must copy it.
type Emit func(*abi.TraceRequest) error

// Parser turns a byte stream into normalised records. Feed may be called with chunks split
// anywhere (also inside a line or a UTF-8 sequence) and may modify the chunk in place;
// End flushes what is left and checks
// the whole input. A Parser is used for one source and is not safe for concurrent use.
// Errors name the line, row or request and the field.
type Parser interface {
	Feed(chunk []byte, emit Emit) error
	End(emit Emit) error
}

// ParseFile runs p over the file at path in chunks of chunkSize bytes.
func ParseFile(p Parser, path string, chunkSize int, emit Emit) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return ParseReader(p, f, chunkSize, emit)
}

// ParseReader runs p over r in chunks of chunkSize bytes.
func ParseReader(p Parser, r io.Reader, chunkSize int, emit Emit) error {
	if chunkSize <= 0 {
		chunkSize = 64 << 10
	}
	buf := make([]byte, chunkSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if ferr := p.Feed(buf[:n], emit); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return p.End(emit)
		}
		if err != nil {
			return err
		}
	}
}

// Lines splits a chunked stream into lines (without the trailing "\n" or "\r\n") and
// numbers them from 1. Only a line that straddles two chunks is copied.
type Lines struct {
	carry []byte
	line  int64
	// MaxLine bounds the length of one line so that a file without newlines cannot grow
	// memory without limit. Zero means 64 MiB.
	MaxLine int
}

// Feed calls fn for every complete line in chunk.
func (l *Lines) Feed(chunk []byte, fn func(line int64, text []byte) error) error {
	max := l.MaxLine
	if max == 0 {
		max = 64 << 20
	}
	for len(chunk) > 0 {
		nl := bytes.IndexByte(chunk, '\n')
		if nl < 0 {
			if len(l.carry)+len(chunk) > max {
				return fmt.Errorf("line %d: longer than %d bytes", l.line+1, max)
			}
			l.carry = append(l.carry, chunk...)
			return nil
		}
		text := chunk[:nl]
		if len(l.carry) > 0 {
			l.carry = append(l.carry, text...)
			text = l.carry
		}
		chunk = chunk[nl+1:]
		l.line++
		if err := fn(l.line, trimCR(text)); err != nil {
			return err
		}
		l.carry = l.carry[:0]
	}
	return nil
}

// End delivers a last line that has no trailing newline.
func (l *Lines) End(fn func(line int64, text []byte) error) error {
	if len(l.carry) == 0 {
		return nil
	}
	l.line++
	text := l.carry
	l.carry = l.carry[:0]
	return fn(l.line, trimCR(text))
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// IsBlank reports whether b holds only whitespace (blank lines are skipped in JSONL).
func IsBlank(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}

// AppendJSONString appends s as a JSON string literal (Go's %q is not always valid JSON).
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// SecondsToMs converts seconds to milliseconds rounded to whole microseconds, removing the
// binary noise of decimal seconds (71.114 s - 10 s is 61114 ms, not 61114.00000000001).
func SecondsToMs(s float64) float64 {
	return math.Round(s*1e6) / 1e3
}

// FieldError names the field a record's value was refused in; the caller adds the line or row.
func FieldError(field string, err error) error {
	return fmt.Errorf("field %q: %w", field, err)
}

// ParserDescriptor is a trace parser's self-description at the current ABI version. windowed
// says whether the format sits on one timeline, so that a trace range and a scale factor apply
// (every format but those whose traces each keep their own time origin).
func ParserDescriptor(name, version, description string, windowed bool) abi.Descriptor {
	return abi.Descriptor{ABIVersion: abi.Version, Kind: abi.KindTraceParser, Name: name, Version: version,
		Description:  description,
		Capabilities: map[string]bool{abi.CapabilityTraceRange: windowed, abi.CapabilityScaleFactor: windowed}}
}
