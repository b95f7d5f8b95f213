package inferencerouter

import "github.com/lensfn/lensfn/runtime/jsoncursor"

// fastPromptText appends the same bytes as peekPrompt + appendPromptText
// for the shape that dominates traffic (messages whose role and content
// are plain strings, or a plain string prompt) without reflection or
// copies of the body; anything else reports false and the caller takes the
// encoding/json path.
func fastPromptText(dst, body []byte) ([]byte, bool) {
	var c jsoncursor.Cursor
	c.Reset(body)
	if !c.Token('{') {
		return dst, false
	}
	var messages, prompt, input []byte
	var seenMessages, seenPrompt, seenInput bool
	if c.Token('}') {
		return dst, c.AtEnd()
	}
	for {
		c.Skip()
		key, ok := c.PlainString()
		if !ok || !c.Token(':') {
			return dst, false
		}
		var seen *bool
		switch string(key) {
		case "messages":
			seen = &seenMessages
		case "prompt":
			seen = &seenPrompt
		case "input":
			seen = &seenInput
		}
		if seen != nil {
			if *seen {
				return dst, false // a duplicate key: encoding/json's last-wins, not ours
			}
			*seen = true
		}
		c.Skip()
		start := c.I
		if _, ok := c.SkipValue(); !ok {
			return dst, false
		}
		switch string(key) {
		case "messages":
			messages = body[start:c.I]
		case "prompt":
			prompt = body[start:c.I]
		case "input":
			input = body[start:c.I]
		}
		if c.Token('}') {
			break
		}
		if !c.Token(',') {
			return dst, false
		}
	}
	if !c.AtEnd() {
		return dst, false
	}
	if len(messages) > 0 && messages[0] == '[' {
		out, n, ok := appendFastMessages(dst, messages)
		if !ok || n > 0 {
			return out, ok
		}
	}
	raw := prompt
	if len(raw) == 0 || raw[0] == 'n' {
		raw = input
	}
	if len(raw) == 0 || raw[0] == 'n' {
		return dst, len(messages) == 0 || messages[0] != '{'
	}
	c.Reset(raw)
	s, ok := c.PlainString()
	return append(dst, s...), ok
}

func appendFastMessages(dst, raw []byte) (out []byte, n int, ok bool) {
	var c jsoncursor.Cursor
	c.Reset(raw)
	c.Is('[')
	if c.Token(']') {
		return dst, 0, true
	}
	for {
		if !c.Token('{') {
			return dst, n, false
		}
		var role, content []byte
		for {
			c.Skip()
			key, ok := c.PlainString()
			if !ok || !c.Token(':') {
				return dst, n, false
			}
			c.Skip()
			switch string(key) {
			case "role", "content":
				v, ok := c.PlainString()
				if !ok || (string(key) == "role" && role != nil) || (string(key) == "content" && content != nil) {
					return dst, n, false
				}
				if string(key) == "role" {
					role = v
				} else {
					content = v
				}
			default:
				if _, ok := c.SkipValue(); !ok {
					return dst, n, false
				}
			}
			if c.Token('}') {
				break
			}
			if !c.Token(',') {
				return dst, n, false
			}
		}
		dst = append(append(append(append(dst, role...), 0), content...), 0)
		n++
		if c.Token(']') {
			return dst, n, true
		}
		if !c.Token(',') {
			return dst, n, false
		}
	}
}
