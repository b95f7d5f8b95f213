package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// safe and htmlSafe say which ASCII bytes are written as they are, without and with HTML
// escaping (<, > and & become \u003c, \u003e, \u0026 as json.Marshal writes them).
var safe, htmlSafe = func() (plain, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}()

// Append appends s as a JSON string literal (with its quotes), as a json.Encoder with
// SetEscapeHTML(false) writes it.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendContents(dst, s, &safe)
	return append(dst, '"')
}

// AppendHTML appends s as a JSON string literal as json.Marshal writes it (<, > and &
// escaped).
func AppendHTML(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendContents(dst, s, &htmlSafe)
	return append(dst, '"')
}

// AppendContents appends what Append writes between the quotes, so a caller can write one
// string literal from several parts.
func AppendContents(dst []byte, s string) []byte { return appendContents(dst, s, &safe) }

func appendContents(dst []byte, s string, plain *[utf8.RuneSelf]bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // the other control bytes, and <, > and & when escaping HTML
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but not valid JavaScript (JSONP): encoding/json escapes them.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}
