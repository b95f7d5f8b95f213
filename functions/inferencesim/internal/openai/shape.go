package openai

import (
	"encoding/json"
	"strconv"
)

// MaxJSONDepth and MaxJSONContainers bound the shape of a request body
// before encoding/json turns it into structs: nesting depth, and
// objects or arrays inside one array (a 4 MiB body of "{}," is 1.3 M
// messages of 48 bytes each otherwise). Arrays of numbers or strings
// (token ids, long prompts) are not limited by this.
const (
	MaxJSONDepth      = 64
	MaxJSONContainers = 16384
)

// CheckJSONShape bounds a body's nesting depth and the containers held by
// any one array before it is decoded into structs. Malformed JSON is left
// to the decoder, which reports it precisely.
func CheckJSONShape(b []byte) *Error {
	var stack [MaxJSONDepth + 1]struct {
		array      bool
		containers int
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			if depth > 0 && stack[depth-1].array {
				if stack[depth-1].containers++; stack[depth-1].containers > MaxJSONContainers {
					return NewError(400, "Request body has an array of more than "+strconv.Itoa(MaxJSONContainers)+" objects or arrays.")
				}
			}
			if depth == MaxJSONDepth {
				return NewError(400, "Request body is nested more than "+strconv.Itoa(MaxJSONDepth)+" levels deep.")
			}
			stack[depth].array, stack[depth].containers = b[i] == '[', 0
			depth++
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// CountArrayItems counts the elements of the JSON array raw (already known
// to be valid JSON), stopping once it passes limit.
func CountArrayItems(raw []byte, limit int) int {
	n, depth, empty := 0, 0, true
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			if depth == 1 && empty {
				empty = false
			}
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth == 1 {
				empty = false
			}
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				if n++; n > limit {
					return n
				}
			}
		case ' ', '\t', '\r', '\n':
		default:
			if depth == 1 {
				empty = false
			}
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// DecodeBody bounds body's JSON shape (CheckJSONShape), then decodes it into v, answering
// a body that does not parse as vLLM does.
func DecodeBody(body []byte, v any) *Error {
	if e := CheckJSONShape(body); e != nil {
		return e
	}
	if err := json.Unmarshal(body, v); err != nil {
		return NewError(400, "Failed to read and parse request body, "+err.Error())
	}
	return nil
}
