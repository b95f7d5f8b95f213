package inferencesim

import (
	"strconv"
	"unicode/utf8"
)

// A fast path for the request shapes that dominate real traffic: a flat
// object with model, messages (string contents) or a string prompt, and
// the common scalar parameters. It decodes without allocating, pointing
// strings into a private copy of the body. Anything else (escaped strings,
// tools, logprobs, array prompts, unknown keys…) makes it give up, and the
// request goes through encoding/json, which handles the full API.

type fastScanner struct {
	b   []byte
	i   int
	bad bool
}

func (s *fastScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *fastScanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *fastScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str reads a string without escapes (an escape or a control character
// makes the fast path give up).
func (s *fastScanner) str() string {
	if !s.consume('"') {
		s.bad = true
		return ""
	}
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			// encoding/json replaces invalid UTF-8: leave that to it
			if !ascii && !utf8.Valid(s.b[start:s.i]) {
				s.bad = true
				return ""
			}
			v := unsafeString(s.b[start:s.i])
			s.i++
			return v
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
		if c == '\\' || c < 0x20 {
			s.bad = true
			return ""
		}
		s.i++
	}
	s.bad = true
	return ""
}

func (s *fastScanner) int() int64 {
	s.ws()
	start := s.i
	s.skipNumber()
	if s.bad {
		return 0
	}
	n, err := strconv.ParseInt(unsafeString(s.b[start:s.i]), 10, 64)
	if err != nil { // fractions, exponents, overflow: the general decoder decides
		s.bad = true
	}
	return n
}

// skipNumber skips a JSON number (sampling parameters we do not use),
// following the JSON grammar exactly.
func (s *fastScanner) skipNumber() {
	s.ws()
	b, i := s.b, s.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		s.bad = true
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			s.bad = true
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.bad = true
			return
		}
	}
	s.i = i
}

func (s *fastScanner) boolean() bool {
	s.ws()
	if hasPrefixAt(s.b, s.i, "true") {
		s.i += 4
		return true
	}
	if hasPrefixAt(s.b, s.i, "false") {
		s.i += 5
		return false
	}
	s.bad = true
	return false
}

func hasPrefixAt(b []byte, i int, p string) bool {
	return len(b)-i >= len(p) && string(b[i:i+len(p)]) == p
}

// object iterates the keys of an object, calling field for each; field
// must consume the value.
func (s *fastScanner) object(field func(key string)) {
	if !s.consume('{') {
		s.bad = true
		return
	}
	if s.consume('}') {
		return
	}
	for !s.bad {
		key := s.str()
		if s.bad || !s.consume(':') {
			s.bad = true
			return
		}
		field(key)
		if s.consume(',') {
			continue
		}
		if !s.consume('}') {
			s.bad = true
		}
		return
	}
}

// fastDecode tries the fast path; it reports false when the request needs
// the general decoder. g.bodyCopy holds the strings it returns.
func (g *genCtx) fastDecode(body []byte) bool {
	g.bodyCopy = append(g.bodyCopy[:0], body...)
	s := fastScanner{b: g.bodyCopy}
	c := &g.chat.commonRequest
	if g.kind == kindText {
		c = &g.text.commonRequest
	}
	s.object(func(key string) {
		switch key {
		case "model":
			c.Model = s.str()
		case "stream":
			c.Stream = s.boolean()
		case "ignore_eos":
			c.IgnoreEOS = s.boolean()
		case "max_tokens":
			g.fastMaxTokens = s.int()
			c.MaxTokens = &g.fastMaxTokens
		case "max_completion_tokens":
			if g.kind != kindChat {
				s.bad = true
				return
			}
			g.fastMaxCompletion = s.int()
			g.chat.MaxCompletionTokens = &g.fastMaxCompletion
		case "n":
			g.fastN = s.int()
			c.N = &g.fastN
		case "temperature", "top_p", "seed", "frequency_penalty", "presence_penalty":
			if s.peek() == 'n' && hasPrefixAt(s.b, s.i, "null") {
				s.i += 4
				return
			}
			s.skipNumber()
		case "stream_options":
			c.StreamOptions = &g.fastStreamOptions
			s.object(func(k string) {
				if k != "include_usage" {
					s.bad = true
					return
				}
				g.fastStreamOptions.IncludeUsage = s.boolean()
			})
		case "messages":
			if g.kind != kindChat || !s.consume('[') {
				s.bad = true
				return
			}
			if s.consume(']') {
				return
			}
			for !s.bad {
				g.chat.Messages = append(g.chat.Messages, chatMessage{})
				m := &g.chat.Messages[len(g.chat.Messages)-1]
				s.object(func(k string) {
					switch k {
					case "role":
						m.Role = s.str()
					case "content":
						if s.peek() != '"' {
							s.bad = true
							return
						}
						m.Content.Text = s.str()
					case "name":
						m.Name = s.str()
					default:
						s.bad = true
					}
				})
				if s.consume(',') {
					continue
				}
				if !s.consume(']') {
					s.bad = true
				}
				return
			}
		case "prompt":
			if g.kind != kindText || s.peek() != '"' {
				s.bad = true
				return
			}
			start := s.i
			s.str()
			g.text.Prompt = g.bodyCopy[start:s.i]
		default:
			s.bad = true
		}
	})
	s.ws()
	return !s.bad && s.i == len(s.b)
}
