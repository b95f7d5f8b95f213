package openai

import "strconv"

// Append-style JSON writing for the response hot path: no reflection, no
// intermediate values. Strings are runtime/jsonstr's (shared with the load engine).

const HexDigits = "0123456789abcdef"

func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

func AppendFloat(dst []byte, f float64) []byte { return strconv.AppendFloat(dst, f, 'g', -1, 64) }

// AppendKey appends "key": (key must not need escaping).
func AppendKey(dst []byte, key string) []byte {
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}
