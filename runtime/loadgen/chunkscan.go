package loadgen

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/lensfn/lensfn/runtime/jsoncursor"
)

// chunkInfo is what timing needs from one stream chunk.
type chunkInfo struct {
	content  bool   // carries generated output: text, content, reasoning or a tool call
	finished bool   // a choice has a finish reason
	usage    *usage // the usage object, when present and not null
	isError  bool   // an "error" member that is not null, or object "error"
	message  string // the top-level "message" (vLLM's error text)
}

// decodeChunk reads one stream chunk. The hand-written scanner below handles the chunks
// OpenAI-compatible servers send without reflection (a replay decodes tens of thousands of
// chunks a second); anything unusual for it (escaped or duplicate keys, unexpected types,
// deep nesting) falls back to encoding/json, which is the reference: a fuzz test checks that
// both agree whenever the scanner answers.
func decodeChunk(data []byte) (chunkInfo, error) {
	info, _, err := decodeChunkText(data, nil, false)
	return info, err
}

// decodeChunkText is decodeChunk that, with keep, also appends the chunk's reply text to
// reply: the first choice's (index 0, or no index) completions text, then its chat
// delta.content. Reasoning and tool-call deltas are not reply text: an OpenAI-style history
// sends back the assistant's content only.
func decodeChunkText(data, reply []byte, keep bool) (chunkInfo, []byte, error) {
	before := len(reply)
	if info, text, ok := scanChunkText(data, reply, keep); ok {
		return info, text, nil
	}
	info, text, err := decodeChunkSlowText(data, reply[:before], keep)
	if err != nil {
		return info, reply[:before], err
	}
	return info, text, nil
}

func decodeChunkSlow(data []byte) (chunkInfo, error) {
	info, _, err := decodeChunkSlowText(data, nil, false)
	return info, err
}

func decodeChunkSlowText(data, reply []byte, keep bool) (chunkInfo, []byte, error) {
	var c streamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return chunkInfo{}, reply, err
	}
	if keep {
		for i := range c.Choices {
			if ch := &c.Choices[i]; firstChoice(ch.Index) {
				reply = append(reply, ch.Text...)
				reply = append(reply, ch.Delta.Content...)
			}
		}
	}
	return chunkInfo{
		content:  c.hasContent(),
		finished: c.finished(),
		usage:    c.Usage,
		isError:  (len(c.Error) > 0 && string(c.Error) != "null") || c.Object == "error",
		message:  c.Message,
	}, reply, nil
}

// firstChoice: a choice's raw index is absent, null or 0 (the engine asks for one choice; a
// caller's n > 1 must not interleave the other choices into the reply).
func firstChoice(index json.RawMessage) bool {
	return len(index) == 0 || string(index) == "null" || string(index) == "0"
}

// scanChunk is the fast path; ok false means "ask encoding/json".
func scanChunk(data []byte) (info chunkInfo, ok bool) {
	info, _, ok = scanChunkText(data, nil, false)
	return info, ok
}

// scanChunkText is scanChunk that, with keep, appends the reply text as decodeChunkText does.
// On !ok, reply may hold a partial append; the caller drops it.
func scanChunkText(data, reply []byte, keep bool) (info chunkInfo, text []byte, ok bool) {
	var s scanner
	s.Reset(data)
	s.keep, s.reply = keep, reply
	s.Skip()
	if !s.objectMembers(func(key []byte) bool {
		switch {
		case fold(key, "choices"):
			return s.choices(&info)
		case fold(key, "usage"):
			return s.usage(&info)
		case fold(key, "error"):
			null, ok := s.SkipValue()
			info.isError = info.isError || !null
			return ok
		case fold(key, "object"):
			v, null, ok := s.plainString()
			if !null && string(v) == "error" { // compared without a copy: every chunk has an object
				info.isError = true
			}
			return ok
		case fold(key, "message"):
			v, null, ok := s.plainString()
			if !null {
				info.message = string(v)
			}
			return ok
		}
		_, ok := s.SkipValue()
		return ok
	}) {
		return chunkInfo{}, s.reply, false
	}
	s.Skip()
	return info, s.reply, s.I == len(s.B)
}

func (s *scanner) choices(info *chunkInfo) bool {
	if s.Null() {
		return true
	}
	if !s.Is('[') {
		return false
	}
	s.Skip()
	if s.Is(']') {
		return true
	}
	for {
		s.Skip()
		if !s.choice(info) {
			return false
		}
		s.Skip()
		if s.Is(']') {
			return true
		}
		if !s.Is(',') {
			return false
		}
	}
}

func (s *scanner) choice(info *chunkInfo) bool {
	if s.Null() {
		return true
	}
	var index, text, content []byte // raw JSON values, kept for the reply text
	ok := s.objectMembers(func(key []byte) bool {
		switch {
		case fold(key, "index"):
			start := s.I
			_, ok := s.SkipValue()
			index = s.B[start:s.I]
			return ok
		case fold(key, "text"):
			start := s.I
			ok := s.contentString(info)
			text = s.B[start:s.I]
			return ok
		case fold(key, "finish_reason"):
			null, ok := s.stringOrNull()
			info.finished = info.finished || !null
			return ok
		case fold(key, "delta"):
			if s.Null() {
				return true
			}
			return s.objectMembers(func(key []byte) bool {
				switch {
				case fold(key, "content"):
					start := s.I
					ok := s.contentString(info)
					content = s.B[start:s.I]
					return ok
				case fold(key, "reasoning_content"), fold(key, "reasoning"):
					return s.contentString(info)
				case fold(key, "tool_calls"):
					null, ok := s.SkipValue()
					info.content = info.content || !null
					return ok
				}
				_, ok := s.SkipValue()
				return ok
			})
		}
		_, ok := s.SkipValue()
		return ok
	})
	if !ok || !s.keep || !firstChoice(index) {
		return ok
	}
	for _, lit := range [][]byte{text, content} {
		if !s.appendString(lit) {
			return false
		}
	}
	return true
}

// appendString appends the decoded JSON string literal lit (nothing for null or an empty
// slice) to the reply; a literal with escapes or bytes that are not UTF-8 is decoded by
// encoding/json, so both paths give the same text.
func (s *scanner) appendString(lit []byte) bool {
	if len(lit) < 2 || lit[0] != '"' {
		return true // absent or null
	}
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		s.reply = append(s.reply, inner...)
		return true
	}
	var v string
	if json.Unmarshal(lit, &v) != nil {
		return false
	}
	s.reply = append(s.reply, v...)
	return true
}

// contentString reads a string (or null) and marks content when it is not empty.
func (s *scanner) contentString(info *chunkInfo) bool {
	start := s.I
	null, ok := s.stringOrNull()
	if ok && !null && s.I-start > 2 {
		info.content = true
	}
	return ok
}

func (s *scanner) usage(info *chunkInfo) bool {
	if s.Null() {
		info.usage = nil
		return true
	}
	// One allocation holds the usage, its details and their numbers.
	block := &struct {
		usage
		details                   tokenDetails
		prompt, completion, cache int
	}{}
	u := &block.usage
	if !s.objectMembers(func(key []byte) bool {
		switch {
		case fold(key, "prompt_tokens"):
			return s.intOrNull(&u.PromptTokens, &block.prompt)
		case fold(key, "completion_tokens"):
			return s.intOrNull(&u.CompletionTokens, &block.completion)
		case fold(key, "prompt_tokens_details"):
			return s.tokenDetails(&u.PromptTokensDetails, &block.details, &block.cache)
		}
		_, ok := s.SkipValue()
		return ok
	}) {
		return false
	}
	info.usage = u
	return true
}

// tokenDetails reads usage.prompt_tokens_details (null leaves *dst nil).
func (s *scanner) tokenDetails(dst **tokenDetails, d *tokenDetails, cached *int) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	*d = tokenDetails{}
	if !s.objectMembers(func(key []byte) bool {
		if fold(key, "cached_tokens") {
			return s.intOrNull(&d.CachedTokens, cached)
		}
		_, ok := s.SkipValue()
		return ok
	}) {
		return false
	}
	*dst = d
	return true
}

// scanner reads one chunk with the shared strict cursor. Its methods return false on anything
// they do not handle exactly like encoding/json, and the caller then falls back to it. With
// keep it appends the first choice's reply text to reply.
type scanner struct {
	jsoncursor.Cursor
	keep  bool
	reply []byte
}

// objectMembers reads an object, calling member with each key (positioned at its value).
// Keys must be plain ASCII without escapes and must not repeat (case-insensitively, as
// encoding/json matches them), which keeps "last one wins" questions away from the fast path.
func (s *scanner) objectMembers(member func(key []byte) bool) bool {
	if !s.Is('{') {
		return false
	}
	var seen [16][]byte
	n := 0
	s.Skip()
	if s.Is('}') {
		return true
	}
	for {
		s.Skip()
		key, ok := s.PlainString()
		if !ok {
			return false
		}
		for _, k := range seen[:min(n, len(seen))] {
			if bytes.EqualFold(k, key) {
				return false
			}
		}
		if n >= len(seen) {
			return false // many members: let encoding/json deal with it
		}
		seen[n] = key
		n++
		s.Skip()
		if !s.Is(':') {
			return false
		}
		s.Skip()
		if !member(key) {
			return false
		}
		s.Skip()
		if s.Is('}') {
			return true
		}
		if !s.Is(',') {
			return false
		}
	}
}

// fold compares an ASCII key with a lower-case name, ignoring case as encoding/json does.
func fold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// plainString reads null or a string without escapes (control characters and non-ASCII bytes
// are left to encoding/json). v points into the chunk.
func (s *scanner) plainString() (v []byte, null bool, ok bool) {
	if s.Null() {
		return nil, true, true
	}
	v, ok = s.PlainString()
	return v, false, ok
}

// stringOrNull validates a string (any valid escapes, any bytes >= 0x20) or null.
func (s *scanner) stringOrNull() (null bool, ok bool) {
	if s.Null() {
		return true, true
	}
	return false, s.SkipString()
}

// intOrNull reads null (leaving *dst nil) or a plain integer of at most 15 digits, which it
// stores in *store and points *dst at.
func (s *scanner) intOrNull(dst **int, store *int) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	start := s.I
	literal, ok := s.Number()
	if !ok {
		return false
	}
	digits := len(literal)
	if literal[0] == '-' {
		digits--
	}
	if digits > 15 {
		return false
	}
	n := 0
	for _, c := range literal[len(literal)-digits:] {
		if c < '0' || c > '9' { // a fraction or an exponent
			s.I = start
			return false
		}
		n = n*10 + int(c-'0')
	}
	if literal[0] == '-' {
		n = -n
	}
	*store = n
	*dst = store
	return true
}
