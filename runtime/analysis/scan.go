package analysis

import (
	"encoding/json"

	"github.com/lensfn/lensfn/runtime/jsoncursor"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// scanRecord is the fast path of decodeRecordWithoutMetadata for lines the way the load engine
// writes them. encoding/json walks a line byte by byte through a state machine, and a record's
// metadata (every inter-token gap) is most of its bytes; this scanner jumps over the metadata and
// parses the dozen scalar fields directly, several times faster. It reports false, leaving the
// line to encoding/json, on anything it does not handle exactly as encoding/json would: an
// unknown, repeated or escaped key, a null where the field is not a pointer, a number that does
// not fit, a string encoding/json would refuse. So its results never differ from encoding/json's
// (FuzzScanRecordMatchesEncodingJSON checks it), and bad lines still get encoding/json's error.
func scanRecord(line []byte, rec *loadgen.Record) bool {
	var s scanner
	s.Reset(line)
	if !s.Token('{') {
		return false
	}
	var seen uint32
	if s.Token('}') {
		return s.AtEnd()
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.Token(':') {
			return false
		}
		bit, ok := recordFieldBits[string(key)] // no allocation: the compiler sees the conversion
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if !s.field(string(key), rec) {
			return false
		}
		if s.Token('}') {
			return s.AtEnd()
		}
		if !s.Token(',') {
			return false
		}
	}
}

var recordFieldBits = func() map[string]uint32 {
	keys := []string{"request_id", "session_id", "turn", "status_code", "successful", "error",
		"scheduled_at_seconds", "started_at_seconds", "first_token_at_seconds", "completed_at_seconds",
		"latency_ms", "ttft_ms", "tpot_ms", "timeline_drift_ms", "input_tokens", "output_tokens", "metadata"}
	bits := make(map[string]uint32, len(keys))
	for i, k := range keys {
		bits[k] = 1 << i
	}
	return bits
}()

// scanner adds what a record's fields need to the shared cursor: whitespace before every
// value, and strings with escapes decoded by encoding/json.
type scanner struct{ jsoncursor.Cursor }

func (s *scanner) literal(word string) bool {
	s.Skip()
	return s.Literal(word)
}

// plainString reads a string of printable ASCII without escapes, which encoding/json returns
// byte for byte.
func (s *scanner) plainString() ([]byte, bool) {
	s.Skip()
	return s.PlainString()
}

// stringValue reads a string value. Escapes and non-ASCII bytes go through encoding/json on the
// string alone (transport errors quote their URL), so the result is exactly encoding/json's.
func (s *scanner) stringValue() (string, bool) {
	s.Skip()
	start := s.I
	if v, ok := s.PlainString(); ok {
		return string(v), true
	}
	s.I = start
	if !s.SkipString() {
		return "", false
	}
	var v string
	err := json.Unmarshal(s.B[start:s.I], &v)
	return v, err == nil
}

func (s *scanner) float() (float64, bool) {
	s.Skip()
	return s.Float()
}

func (s *scanner) int() (int64, bool) {
	s.Skip()
	return s.Int()
}

func (s *scanner) optionalFloat() (*float64, bool) {
	if s.literal("null") {
		return nil, true
	}
	v, ok := s.float()
	return &v, ok
}

// field parses the value of key into rec.
func (s *scanner) field(key string, rec *loadgen.Record) bool {
	var ok bool
	switch key {
	case "request_id":
		rec.RequestID, ok = s.int()
	case "session_id":
		rec.SessionID, ok = s.stringValue()
	case "turn":
		var v int64
		v, ok = s.int()
		rec.Turn = int(v)
		ok = ok && int64(rec.Turn) == v
	case "status_code":
		if s.literal("null") {
			rec.StatusCode, ok = nil, true
		} else {
			var v int64
			v, ok = s.int()
			code := int(v)
			rec.StatusCode, ok = &code, ok && int64(code) == v
		}
	case "successful":
		if s.literal("true") {
			rec.Successful, ok = true, true
		} else {
			rec.Successful, ok = false, s.literal("false")
		}
	case "error":
		if s.literal("null") {
			rec.Error, ok = nil, true
		} else {
			var text string
			text, ok = s.stringValue()
			rec.Error = &text
		}
	case "scheduled_at_seconds":
		rec.ScheduledAtSeconds, ok = s.float()
	case "started_at_seconds":
		rec.StartedAtSeconds, ok = s.float()
	case "first_token_at_seconds":
		rec.FirstTokenAtSeconds, ok = s.optionalFloat()
	case "completed_at_seconds":
		rec.CompletedAtSeconds, ok = s.float()
	case "latency_ms":
		rec.LatencyMs, ok = s.float()
	case "ttft_ms":
		rec.TTFTMs, ok = s.optionalFloat()
	case "tpot_ms":
		rec.TPOTMs, ok = s.optionalFloat()
	case "timeline_drift_ms":
		rec.TimelineDriftMs, ok = s.optionalFloat()
	case "input_tokens":
		rec.InputTokens, ok = s.float()
	case "output_tokens":
		rec.OutputTokens, ok = s.float()
	case "metadata":
		ok = s.skipMetadata()
	}
	return ok
}

// skipMetadata jumps over the metadata value: null or an object, tracking only strings and
// nesting. It checks the structure, not every token (validating every inter-token gap would
// double the cost of a line); a line it accepts whose metadata encoding/json would reject is
// still summarised, as the metadata plays no part in it.
func (s *scanner) skipMetadata() bool {
	if s.literal("null") {
		return true
	}
	if s.Peek() != '{' {
		return false
	}
	b, depth := s.B, 0
	for i := s.I; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.I = i + 1
				return true
			}
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
	return false
}
