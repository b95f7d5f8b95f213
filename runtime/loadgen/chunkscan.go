package loadgen

import (
	"bytes"
	"encoding/json"
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
	if info, ok := scanChunk(data); ok {
		return info, nil
	}
	return decodeChunkSlow(data)
}

func decodeChunkSlow(data []byte) (chunkInfo, error) {
	var c streamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return chunkInfo{}, err
	}
	return chunkInfo{
		content:  c.hasContent(),
		finished: c.finished(),
		usage:    c.Usage,
		isError:  (len(c.Error) > 0 && string(c.Error) != "null") || c.Object == "error",
		message:  c.Message,
	}, nil
}

// scanChunk is the fast path; ok false means "ask encoding/json".
func scanChunk(data []byte) (info chunkInfo, ok bool) {
	s := scanner{b: data}
	s.ws()
	if !s.objectMembers(func(key []byte) bool {
		switch {
		case fold(key, "choices"):
			return s.choices(&info)
		case fold(key, "usage"):
			return s.usage(&info)
		case fold(key, "error"):
			null, ok := s.skipValue()
			info.isError = info.isError || !null
			return ok
		case fold(key, "object"):
			v, null, ok := s.plainString()
			if !null && v == "error" {
				info.isError = true
			}
			return ok
		case fold(key, "message"):
			v, null, ok := s.plainString()
			if !null {
				info.message = v
			}
			return ok
		}
		_, ok := s.skipValue()
		return ok
	}) {
		return chunkInfo{}, false
	}
	s.ws()
	return info, s.i == len(s.b)
}

func (s *scanner) choices(info *chunkInfo) bool {
	if s.null() {
		return true
	}
	if !s.consume('[') {
		return false
	}
	s.ws()
	if s.consume(']') {
		return true
	}
	for {
		s.ws()
		if !s.choice(info) {
			return false
		}
		s.ws()
		if s.consume(']') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

func (s *scanner) choice(info *chunkInfo) bool {
	if s.null() {
		return true
	}
	return s.objectMembers(func(key []byte) bool {
		switch {
		case fold(key, "text"):
			return s.contentString(info)
		case fold(key, "finish_reason"):
			null, ok := s.stringOrNull()
			info.finished = info.finished || !null
			return ok
		case fold(key, "delta"):
			if s.null() {
				return true
			}
			return s.objectMembers(func(key []byte) bool {
				switch {
				case fold(key, "content"), fold(key, "reasoning_content"),
					fold(key, "reasoning"):
					return s.contentString(info)
				case fold(key, "tool_calls"):
					null, ok := s.skipValue()
					info.content = info.content || !null
					return ok
				}
				_, ok := s.skipValue()
				return ok
			})
		}
		_, ok := s.skipValue()
		return ok
	})
}

// contentString reads a string (or null) and marks content when it is not empty.
func (s *scanner) contentString(info *chunkInfo) bool {
	start := s.i
	null, ok := s.stringOrNull()
	if ok && !null && s.i-start > 2 {
		info.content = true
	}
	return ok
}

func (s *scanner) usage(info *chunkInfo) bool {
	if s.null() {
		info.usage = nil
		return true
	}
	u := &usage{}
	if !s.objectMembers(func(key []byte) bool {
		switch {
		case fold(key, "prompt_tokens"):
			return s.intOrNull(&u.PromptTokens)
		case fold(key, "completion_tokens"):
			return s.intOrNull(&u.CompletionTokens)
		}
		_, ok := s.skipValue()
		return ok
	}) {
		return false
	}
	info.usage = u
	return true
}

// scanner is a strict JSON reader over one chunk. Its methods return false on anything they
// do not handle exactly like encoding/json, and the caller then falls back to it.
type scanner struct {
	b     []byte
	i     int
	depth int
}

func (s *scanner) ws() {
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
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// objectMembers reads an object, calling member with each key (positioned at its value).
// Keys must be plain ASCII without escapes and must not repeat (case-insensitively, as
// encoding/json matches them), which keeps "last one wins" questions away from the fast path.
func (s *scanner) objectMembers(member func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	s.depth++
	if s.depth > 64 {
		return false
	}
	defer func() { s.depth-- }()
	var seen [16][]byte
	n := 0
	s.ws()
	if s.consume('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.key()
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
		s.ws()
		if !s.consume(':') {
			return false
		}
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		if s.consume('}') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// key reads a string of printable ASCII without escapes.
func (s *scanner) key() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			k := s.b[start:s.i]
			s.i++
			return k, true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
		s.i++
	}
	return nil, false
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
// are left to encoding/json).
func (s *scanner) plainString() (v string, null bool, ok bool) {
	if s.null() {
		return "", true, true
	}
	if !s.consume('"') {
		return "", false, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			v = string(s.b[start:s.i])
			s.i++
			return v, false, true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return "", false, false
		}
		s.i++
	}
	return "", false, false
}

// stringOrNull validates a string (any valid escapes, any bytes >= 0x20) or null.
func (s *scanner) stringOrNull() (null bool, ok bool) {
	if s.null() {
		return true, true
	}
	return false, s.skipString()
}

func (s *scanner) skipString() bool {
	if !s.consume('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.i++
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 5
			default:
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// intOrNull reads null (leaving *dst nil) or a plain integer of at most 15 digits.
func (s *scanner) intOrNull(dst **int) bool {
	if s.null() {
		*dst = nil
		return true
	}
	neg := s.consume('-')
	start := s.i
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 15 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	if neg {
		n = -n
	}
	*dst = &n
	return true
}

// skipValue validates and skips any JSON value, reporting whether it was null.
func (s *scanner) skipValue() (null bool, ok bool) {
	if s.i >= len(s.b) {
		return false, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return false, s.skipString()
	case c == '{':
		return false, s.objectAny()
	case c == '[':
		s.i++
		s.depth++
		if s.depth > 64 {
			return false, false
		}
		defer func() { s.depth-- }()
		s.ws()
		if s.consume(']') {
			return false, true
		}
		for {
			s.ws()
			if _, ok := s.skipValue(); !ok {
				return false, false
			}
			s.ws()
			if s.consume(']') {
				return false, true
			}
			if !s.consume(',') {
				return false, false
			}
		}
	case c == 'n':
		if s.null() {
			return true, true
		}
		return false, false
	case c == 't':
		return false, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == '-' || (c >= '0' && c <= '9'):
		return false, s.number()
	}
	return false, false
}

// objectAny skips an object whose keys may be anything valid.
func (s *scanner) objectAny() bool {
	s.i++ // '{'
	s.depth++
	if s.depth > 64 {
		return false
	}
	defer func() { s.depth-- }()
	s.ws()
	if s.consume('}') {
		return true
	}
	for {
		s.ws()
		if !s.skipString() {
			return false
		}
		s.ws()
		if !s.consume(':') {
			return false
		}
		s.ws()
		if _, ok := s.skipValue(); !ok {
			return false
		}
		s.ws()
		if s.consume('}') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number skips a number in strict JSON grammar.
func (s *scanner) number() bool {
	s.consume('-')
	digits := func() int {
		start := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i - start
	}
	start := s.i
	n := digits()
	if n == 0 || (n > 1 && s.b[start] == '0') {
		return false
	}
	if s.consume('.') && digits() == 0 {
		return false
	}
	if s.consume('e') || s.consume('E') {
		if !s.consume('+') {
			s.consume('-')
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
