package analysis

import (
	"encoding/json"
	"strconv"

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
	s := scanner{b: line}
	if !s.consume('{') {
		return false
	}
	var seen uint32
	if s.consume('}') {
		return s.atEnd()
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.consume(':') {
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
		if s.consume('}') {
			return s.atEnd()
		}
		if !s.consume(',') {
			return false
		}
	}
}

var recordFieldBits = func() map[string]uint32 {
	keys := []string{"request_id", "session_id", "turn", "status_code", "successful", "error",
		"scheduled_at_seconds", "started_at_seconds", "first_token_at_seconds", "completed_at_seconds",
		"latency_ms", "ttft_ms", "tpot_ms", "input_tokens", "output_tokens", "metadata"}
	bits := make(map[string]uint32, len(keys))
	for i, k := range keys {
		bits[k] = 1 << i
	}
	return bits
}()

type scanner struct {
	b []byte
	i int
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) atEnd() bool {
	s.skipSpace()
	return s.i == len(s.b)
}

func (s *scanner) literal(word string) bool {
	s.skipSpace()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// plainString reads a string of printable ASCII without escapes, which encoding/json returns
// byte for byte.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, false
		}
	}
	return nil, false
}

// stringValue reads a string value. Escapes and non-ASCII bytes go through encoding/json on the
// string alone (transport errors quote their URL), so the result is exactly encoding/json's.
func (s *scanner) stringValue() (string, bool) {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start, plain := s.i, true
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			if plain {
				return string(s.b[start+1 : s.i-1]), true
			}
			var v string
			err := json.Unmarshal(s.b[start:s.i], &v)
			return v, err == nil
		case c == '\\':
			plain = false
			s.i++ // the escaped byte cannot end the string
		case c < 0x20 || c >= 0x7f:
			plain = false
		}
	}
	return "", false
}

// number reads a literal of the JSON number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() ([]byte, bool) {
	s.skipSpace()
	start, b := s.i, s.b
	digits := func() bool {
		from := s.i
		for s.i < len(b) && b[s.i] >= '0' && b[s.i] <= '9' {
			s.i++
		}
		return s.i > from
	}
	if s.i < len(b) && b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(b) && b[s.i] == '0':
		s.i++
	case s.i < len(b) && b[s.i] >= '1' && b[s.i] <= '9':
		digits()
	default:
		return nil, false
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if !digits() {
			return nil, false
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return b[start:s.i], true
}

func (s *scanner) float() (float64, bool) {
	literal, ok := s.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(literal), 64)
	return v, err == nil
}

func (s *scanner) int() (int64, bool) {
	literal, ok := s.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(literal), 10, 64)
	return v, err == nil
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
// nesting. It checks the structure, not every token; a line it accepts whose metadata
// encoding/json would reject is still summarised, as the metadata plays no part in it.
func (s *scanner) skipMetadata() bool {
	if s.literal("null") {
		return true
	}
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	depth := 0
	for ; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		case '"':
			for s.i++; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
				if s.b[s.i] == '\\' {
					s.i++
				}
			}
		}
	}
	return false
}
