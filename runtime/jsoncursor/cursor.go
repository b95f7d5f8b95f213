package jsoncursor

import "strconv"

// MaxDepth bounds the nesting SkipValue follows, like encoding/json's own limit keeps a hostile
// input from exhausting the stack (theirs is 10,000; ours is lower because the fast paths never
// need deep values and the fallback handles them).
const MaxDepth = 64

// Cursor reads JSON from B starting at I.
type Cursor struct {
	B     []byte
	I     int
	depth int
}

// Reset starts reading b from its beginning.
func (c *Cursor) Reset(b []byte) { *c = Cursor{B: b} }

// Skip moves past whitespace.
func (c *Cursor) Skip() {
	for c.I < len(c.B) {
		switch c.B[c.I] {
		case ' ', '\t', '\n', '\r':
			c.I++
		default:
			return
		}
	}
}

// Is consumes ch when it is the byte at the cursor.
func (c *Cursor) Is(ch byte) bool {
	if c.I < len(c.B) && c.B[c.I] == ch {
		c.I++
		return true
	}
	return false
}

// Token skips whitespace and consumes ch when it comes next.
func (c *Cursor) Token(ch byte) bool {
	c.Skip()
	return c.Is(ch)
}

// Peek skips whitespace and returns the next byte without consuming it (0 at the end).
func (c *Cursor) Peek() byte {
	c.Skip()
	if c.I < len(c.B) {
		return c.B[c.I]
	}
	return 0
}

// AtEnd skips whitespace and reports whether nothing follows.
func (c *Cursor) AtEnd() bool {
	c.Skip()
	return c.I == len(c.B)
}

// Literal consumes word when it stands at the cursor.
func (c *Cursor) Literal(word string) bool {
	if len(c.B)-c.I >= len(word) && string(c.B[c.I:c.I+len(word)]) == word {
		c.I += len(word)
		return true
	}
	return false
}

// Null consumes a null at the cursor.
func (c *Cursor) Null() bool { return c.Literal("null") }

// Bool reads true or false at the cursor.
func (c *Cursor) Bool() (v, ok bool) {
	if c.Literal("true") {
		return true, true
	}
	return false, c.Literal("false")
}

// PlainString reads a string of printable ASCII without escapes at the cursor and returns its
// contents, which are exactly what encoding/json would decode. Anything else reports false.
func (c *Cursor) PlainString() ([]byte, bool) {
	if !c.Is('"') {
		return nil, false
	}
	start := c.I
	for c.I < len(c.B) {
		switch ch := c.B[c.I]; {
		case ch == '"':
			c.I++
			return c.B[start : c.I-1], true
		case ch == '\\' || ch < 0x20 || ch >= 0x7f:
			return nil, false
		}
		c.I++
	}
	return nil, false
}

// SkipString validates and skips a string at the cursor: any bytes >= 0x20 and the escapes of
// the JSON grammar.
func (c *Cursor) SkipString() bool {
	if !c.Is('"') {
		return false
	}
	for c.I < len(c.B) {
		ch := c.B[c.I]
		switch {
		case ch == '"':
			c.I++
			return true
		case ch < 0x20:
			return false
		case ch == '\\':
			c.I++
			if c.I >= len(c.B) {
				return false
			}
			switch c.B[c.I] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.I++
			case 'u':
				if len(c.B)-c.I < 5 {
					return false
				}
				for _, h := range c.B[c.I+1 : c.I+5] {
					if !isHex(h) {
						return false
					}
				}
				c.I += 5
			default:
				return false
			}
		default:
			c.I++
		}
	}
	return false
}

func isHex(ch byte) bool {
	return '0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F'
}

// Number reads a literal of the JSON number grammar at the cursor,
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and returns its bytes.
func (c *Cursor) Number() ([]byte, bool) {
	b, i := c.B, c.I
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		from := i + 1
		if i = digits(b, from); i == from {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		from := i
		if i = digits(b, from); i == from {
			return nil, false
		}
	}
	c.I = i
	return b[start:i], true
}

// digits returns the index after the run of ASCII digits starting at i.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Float reads a number at the cursor as a float64 (false when it does not fit).
func (c *Cursor) Float() (float64, bool) {
	literal, ok := c.Number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(literal), 64) // no allocation: the conversion is not kept
	return v, err == nil
}

// Int reads a number at the cursor as an int64; a fraction, an exponent or an overflow reports
// false (encoding/json refuses those for an integer field).
func (c *Cursor) Int() (int64, bool) {
	literal, ok := c.Number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(literal), 10, 64)
	return v, err == nil
}

// SkipValue validates and skips any JSON value at the cursor, reporting whether it was null.
// Nesting deeper than MaxDepth reports false.
func (c *Cursor) SkipValue() (null bool, ok bool) {
	if c.I >= len(c.B) {
		return false, false
	}
	switch ch := c.B[c.I]; {
	case ch == '"':
		return false, c.SkipString()
	case ch == '{':
		return false, c.skipObject()
	case ch == '[':
		return false, c.skipArray()
	case ch == 'n':
		ok := c.Null()
		return ok, ok
	case ch == 't':
		return false, c.Literal("true")
	case ch == 'f':
		return false, c.Literal("false")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		_, ok := c.Number()
		return false, ok
	}
	return false, false
}

func (c *Cursor) skipArray() bool {
	c.I++ // '['
	if c.depth++; c.depth > MaxDepth {
		return false
	}
	defer func() { c.depth-- }()
	if c.Token(']') {
		return true
	}
	for {
		c.Skip()
		if _, ok := c.SkipValue(); !ok {
			return false
		}
		if c.Token(']') {
			return true
		}
		if !c.Token(',') {
			return false
		}
	}
}

func (c *Cursor) skipObject() bool {
	c.I++ // '{'
	if c.depth++; c.depth > MaxDepth {
		return false
	}
	defer func() { c.depth-- }()
	if c.Token('}') {
		return true
	}
	for {
		c.Skip()
		if !c.SkipString() || !c.Token(':') {
			return false
		}
		c.Skip()
		if _, ok := c.SkipValue(); !ok {
			return false
		}
		if c.Token('}') {
			return true
		}
		if !c.Token(',') {
			return false
		}
	}
}
