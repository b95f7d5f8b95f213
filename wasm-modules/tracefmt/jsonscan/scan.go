package jsonscan

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Scanner walks one JSON document held in a byte slice. The zero value is ready after Reset.
type Scanner struct {
	b       []byte
	i       int
	scratch []byte
	first   bool
}

// Reset points the scanner at b.
func (s *Scanner) Reset(b []byte) {
	s.b, s.i, s.first = b, 0, true
}

// ws skips whitespace. Hot loops here and below work on local copies of s.b and s.i:
// the Go wasm backend reloads struct fields through the pointer on every iteration.
func (s *Scanner) ws() {
	b, i := s.b, s.i
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	s.i = i
}

func (s *Scanner) found() string {
	if s.i >= len(s.b) {
		return "end of input"
	}
	c := s.b[s.i]
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("%q", string(c))
}

// BeginObject consumes the opening brace of an object.
func (s *Scanner) BeginObject() error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return fmt.Errorf("expected a JSON object, found %s", s.found())
	}
	s.i++
	s.first = true
	return nil
}

// NextKey returns the next key of the current object, or ok=false after the closing brace.
// The key slice is valid until the next call. The caller must consume the value.
func (s *Scanner) NextKey() (key []byte, ok bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, false, errors.New("object not closed: unexpected end of input")
	}
	if s.b[s.i] == '}' {
		s.i++
		return nil, false, nil
	}
	if !s.first {
		if s.b[s.i] != ',' {
			return nil, false, fmt.Errorf("expected ',' or '}' in object, found %s", s.found())
		}
		s.i++
		s.ws()
	}
	s.first = false
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, fmt.Errorf("expected a quoted key, found %s", s.found())
	}
	key, err = s.stringBytes()
	if err != nil {
		return nil, false, err
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, false, fmt.Errorf("expected ':' after key %q, found %s", key, s.found())
	}
	s.i++
	return key, true, nil
}

// End checks that nothing but whitespace follows the document.
func (s *Scanner) End() error {
	s.ws()
	if s.i != len(s.b) {
		return fmt.Errorf("unexpected %s after the JSON object", s.found())
	}
	return nil
}

// Null consumes a JSON null and reports whether there was one.
func (s *Scanner) Null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// Float reads a JSON number.
func (s *Scanner) Float() (float64, error) {
	s.ws()
	start := s.i
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	var mant uint64
	digits := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if digits < 18 {
			mant = mant*10 + uint64(s.b[s.i]-'0')
		}
		digits++
		s.i++
	}
	if digits == 0 {
		s.i = start
		return 0, fmt.Errorf("expected a number, found %s", s.found())
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') || digits > 15 {
		for s.i < len(s.b) && isNumberByte(s.b[s.i]) {
			s.i++
		}
		text := s.b[start:s.i]
		v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(text), len(text)), 64)
		if err != nil {
			return 0, fmt.Errorf("invalid number %q", text)
		}
		return v, nil
	}
	if s.b[start+boolInt(neg)] == '0' && digits > 1 {
		return 0, fmt.Errorf("invalid number %q (leading zero)", s.b[start:s.i])
	}
	v := float64(mant)
	if neg {
		v = -v
	}
	return v, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// Int reads a JSON number that must be an integer (1.0 is accepted, 1.5 is not).
func (s *Scanner) Int() (int64, error) {
	s.ws()
	start := s.i
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	var v int64
	digits := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if v > (math.MaxInt64-9)/10 {
			return 0, fmt.Errorf("integer %q out of range", s.b[start:s.i+1])
		}
		v = v*10 + int64(s.b[s.i]-'0')
		digits++
		s.i++
	}
	if digits == 0 {
		s.i = start
		return 0, fmt.Errorf("expected an integer, found %s", s.found())
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i = start
		f, err := s.Float()
		if err != nil {
			return 0, err
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, fmt.Errorf("expected an integer, found %q", s.b[start:s.i])
		}
		return int64(f), nil
	}
	if neg {
		v = -v
	}
	return v, nil
}

// NonNegativeInt reads an integer >= 0 (token counts, ids).
func (s *Scanner) NonNegativeInt() (int64, error) {
	v, err := s.Int()
	if err == nil && v < 0 {
		err = negative(float64(v))
	}
	return v, err
}

// NonNegativeFloat reads a number >= 0 (times, delays).
func (s *Scanner) NonNegativeFloat() (float64, error) {
	v, err := s.Float()
	if err == nil && v < 0 {
		err = negative(v)
	}
	return v, err
}

// negative is out of line so that the two readers above inline into the parsers' loops.
func negative(v float64) error { return fmt.Errorf("negative value %v", v) }

// IntArray reads a JSON array of integers, appending to dst[:0]. Hash-id arrays are most
// of a trace's bytes, so plain non-negative integers take an inlined fast path.
func (s *Scanner) IntArray(dst []int64) ([]int64, error) {
	dst = dst[:0]
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return dst, fmt.Errorf("expected an array of integers, found %s", s.found())
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return dst, nil
	}
	b, i := s.b, s.i // the loop works on locals; s.i is synced around slow paths
	for {
		// Fast path: digits (no sign, no leading zero unless alone, at most 18 digits)
		// followed by ',' or ']' after optional spaces.
		var v int64
		start := i
		if n := 0; i+8 <= len(b) {
			// Eight bytes at once: count the leading digits and convert them together
			// (a wasm guest pays per byte for the loop below).
			x := *(*uint64)(unsafe.Pointer(&b[i]))
			if littleEndian {
				n = leadingDigits(x)
			}
			if n > 0 && n < 8 {
				v = int64(digitsValue(x, n))
				i += n
			}
		}
		for i < len(b) && b[i]-'0' <= 9 && i-start < 18 {
			v = v*10 + int64(b[i]-'0')
			i++
		}
		if !(i > start && (b[start] != '0' || i-start == 1) && i < len(b) && (b[i] == ',' || b[i] == ']' || b[i] == ' ')) {
			s.i = start
			var err error
			if v, err = s.Int(); err != nil {
				return dst, fmt.Errorf("element %d: %w", len(dst), err)
			}
			i = s.i
		}
		dst = append(dst, v)
		// The usual separator is ", "; the element parser handles whatever follows it.
		if i+1 < len(b) && b[i] == ',' && b[i+1] == ' ' {
			i += 2
			continue
		}
		s.i = i
		s.ws()
		i = s.i
		if i >= len(b) {
			return dst, errors.New("array not closed: unexpected end of input")
		}
		switch b[i] {
		case ',':
			i++
			s.i = i
			s.ws()
			i = s.i
		case ']':
			s.i = i + 1
			return dst, nil
		default:
			return dst, fmt.Errorf("expected ',' or ']' in array, found %s", s.found())
		}
	}
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// leadingDigits counts the ASCII digits at the start (lowest bytes) of x. A byte is a
// digit when its high nibble is 3 and stays 3 after adding 6. The addition can carry into
// the next byte only from a byte >= 0xfa, which is not a digit, so the count is exact.
func leadingDigits(x uint64) int {
	const nibbles, threes, sixes = 0xf0f0f0f0f0f0f0f0, 0x3030303030303030, 0x0606060606060606
	notDigit := (x&nibbles ^ threes) | ((x+sixes)&nibbles ^ threes)
	return bits.TrailingZeros64(notDigit) / 8
}

// digitsValue converts the first n (1..7) ASCII digits of x (lowest byte first, most
// significant digit first) with three multiply-and-mask steps.
func digitsValue(x uint64, n int) uint64 {
	x = (x & 0x0f0f0f0f0f0f0f0f) << (8 * (8 - n)) // digit values, right-aligned, zeros in front
	x = (x*10 + x>>8) & 0x00ff00ff00ff00ff
	x = (x*100 + x>>16) & 0x0000ffff0000ffff
	return (x*10000 + x>>32) & 0x00000000ffffffff
}

// String reads a JSON string.
func (s *Scanner) String() (string, error) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", fmt.Errorf("expected a string, found %s", s.found())
	}
	b, err := s.stringBytes()
	return string(b), err
}

// stringBytes reads a string starting at the opening quote. The result aliases the input
// when the string has no escapes, else the scanner's scratch buffer.
func (s *Scanner) stringBytes() ([]byte, error) {
	b := s.b
	start := s.i + 1
	for i := start; i < len(b); i++ {
		c := b[i]
		if c == '"' {
			s.i = i + 1
			return b[start:i], nil
		}
		if c == '\\' {
			s.i = i
			return s.unescape(start)
		}
		if c < 0x20 {
			s.i = i
			return nil, fmt.Errorf("control character 0x%02x in string", c)
		}
	}
	s.i = len(b)
	return nil, errors.New("string not closed: unexpected end of input")
}

func (s *Scanner) unescape(start int) ([]byte, error) {
	out := append(s.scratch[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			s.scratch = out
			if !utf8.Valid(out) {
				return nil, errors.New("string is not valid UTF-8")
			}
			return out, nil
		case c < 0x20:
			return nil, fmt.Errorf("control character 0x%02x in string", c)
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, errors.New(`invalid \u escape in string`)
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					r2, ok = s.hex4()
					if !ok {
						return nil, errors.New(`invalid \u escape in string`)
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, fmt.Errorf("invalid escape \\%c in string", e)
		}
	}
	return nil, errors.New("string not closed: unexpected end of input")
}

func (s *Scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// Raw reads any JSON value and returns its bytes (aliasing the input), checked with
// encoding/json's validator: raw values are rare (messages, payloads) and must be valid
// before they are sent verbatim.
func (s *Scanner) Raw() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.skip(0); err != nil {
		return nil, err
	}
	raw := s.b[start:s.i]
	if !json.Valid(raw) {
		return nil, errors.New("invalid JSON value")
	}
	return raw, nil
}

const maxDepth = 512

func (s *Scanner) skip(depth int) error {
	if depth > maxDepth {
		return errors.New("JSON nested too deeply")
	}
	s.ws()
	if s.i >= len(s.b) {
		return errors.New("expected a value, found end of input")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, err := s.stringBytes()
		return err
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		s.i++
		for {
			s.ws()
			if s.i >= len(s.b) {
				return errors.New("value not closed: unexpected end of input")
			}
			switch s.b[s.i] {
			case closer:
				s.i++
				return nil
			case ',', ':':
				s.i++
			default:
				if err := s.skip(depth + 1); err != nil {
					return err
				}
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.Float()
		return err
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return nil
			}
		}
		return fmt.Errorf("expected a value, found %s", s.found())
	}
}
