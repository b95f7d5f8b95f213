package openai

import (
	"unicode/utf8"

	"github.com/lensfn/lensfn/runtime/jsoncursor"
)

// Scanner reads the flat request shapes of the fast decoder (a jsoncursor.Cursor with
// string, number and object helpers); any shape it does not expect sets Bad, and the
// request goes through encoding/json.
type Scanner struct {
	jsoncursor.Cursor
	Bad bool
}

// Str reads a string without escapes (an escape or a control character
// makes the fast path give up).
func (s *Scanner) Str() string {
	if !s.Token('"') {
		s.Bad = true
		return ""
	}
	start := s.I
	ascii := true
	for s.I < len(s.B) {
		c := s.B[s.I]
		if c == '"' {
			// encoding/json replaces invalid UTF-8: leave that to it
			if !ascii && !utf8.Valid(s.B[start:s.I]) {
				s.Bad = true
				return ""
			}
			v := UnsafeString(s.B[start:s.I])
			s.I++
			return v
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
		if c == '\\' || c < 0x20 {
			s.Bad = true
			return ""
		}
		s.I++
	}
	s.Bad = true
	return ""
}

// Integer reads an integer; fractions, exponents and overflow are left to the general decoder.
func (s *Scanner) Integer() int64 {
	s.Skip()
	n, ok := s.Int()
	s.Bad = s.Bad || !ok
	return n
}

// FloatField reads a number or null into *dst and returns the field's value
// (nil for null), as encoding/json fills a *float64.
func (s *Scanner) FloatField(dst *float64) *float64 {
	s.Skip()
	if s.Peek() == 'n' && s.Null() {
		return nil
	}
	v, ok := s.Float()
	s.Bad = s.Bad || !ok
	*dst = v
	return dst
}

// SkipNumber skips a JSON number (sampling parameters we do not use).
func (s *Scanner) SkipNumber() {
	s.Skip()
	if _, ok := s.Number(); !ok {
		s.Bad = true
	}
}

func (s *Scanner) Boolean() bool {
	s.Skip()
	v, ok := s.Bool()
	s.Bad = s.Bad || !ok
	return v
}

// Object iterates the keys of an object, calling field for each; field
// must consume the value.
func (s *Scanner) Object(field func(key string)) {
	if !s.Token('{') {
		s.Bad = true
		return
	}
	if s.Token('}') {
		return
	}
	for !s.Bad {
		key := s.Str()
		if s.Bad || !s.Token(':') {
			s.Bad = true
			return
		}
		field(key)
		if s.Token(',') {
			continue
		}
		if !s.Token('}') {
			s.Bad = true
		}
		return
	}
}
