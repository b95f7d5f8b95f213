package inferencesim

import (
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"

	"unicode/utf8"

	"github.com/lensfn/lensfn/runtime/jsoncursor"
)

// A fast path for the request shapes that dominate real traffic: a flat
// object with model, messages (string contents) or a string prompt, and
// the common scalar parameters. It decodes without allocating, pointing
// strings into a private copy of the body. Anything else (escaped strings,
// tools, logprobs, array prompts, unknown keys…) makes it give up, and the
// request goes through encoding/json, which handles the full API.

type fastScanner struct {
	jsoncursor.Cursor
	bad bool
}

// str reads a string without escapes (an escape or a control character
// makes the fast path give up).
func (s *fastScanner) str() string {
	if !s.Token('"') {
		s.bad = true
		return ""
	}
	start := s.I
	ascii := true
	for s.I < len(s.B) {
		c := s.B[s.I]
		if c == '"' {
			// encoding/json replaces invalid UTF-8: leave that to it
			if !ascii && !utf8.Valid(s.B[start:s.I]) {
				s.bad = true
				return ""
			}
			v := openai.UnsafeString(s.B[start:s.I])
			s.I++
			return v
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
		if c == '\\' || c < 0x20 {
			s.bad = true
			return ""
		}
		s.I++
	}
	s.bad = true
	return ""
}

// integer reads an integer; fractions, exponents and overflow are left to the general decoder.
func (s *fastScanner) integer() int64 {
	s.Skip()
	n, ok := s.Int()
	s.bad = s.bad || !ok
	return n
}

// float reads a number or null into *dst and returns the field's value
// (nil for null), as encoding/json fills a *float64.
func (s *fastScanner) float(dst *float64) *float64 {
	s.Skip()
	if s.Peek() == 'n' && s.Null() {
		return nil
	}
	v, ok := s.Float()
	s.bad = s.bad || !ok
	*dst = v
	return dst
}

// skipNumber skips a JSON number (sampling parameters we do not use).
func (s *fastScanner) skipNumber() {
	s.Skip()
	if _, ok := s.Number(); !ok {
		s.bad = true
	}
}

func (s *fastScanner) boolean() bool {
	s.Skip()
	v, ok := s.Bool()
	s.bad = s.bad || !ok
	return v
}

// object iterates the keys of an object, calling field for each; field
// must consume the value.
func (s *fastScanner) object(field func(key string)) {
	if !s.Token('{') {
		s.bad = true
		return
	}
	if s.Token('}') {
		return
	}
	for !s.bad {
		key := s.str()
		if s.bad || !s.Token(':') {
			s.bad = true
			return
		}
		field(key)
		if s.Token(',') {
			continue
		}
		if !s.Token('}') {
			s.bad = true
		}
		return
	}
}

// fastDecode tries the fast path; it reports false when the request needs
// the general decoder. g.bodyCopy holds the strings it returns.
func (g *genCtx) fastDecode(body []byte) bool {
	g.bodyCopy = append(g.bodyCopy[:0], body...)
	var s fastScanner
	s.Reset(g.bodyCopy)
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
			g.fastMaxTokens = s.integer()
			c.MaxTokens = &g.fastMaxTokens
		case "max_completion_tokens":
			if g.kind != kindChat {
				s.bad = true
				return
			}
			g.fastMaxCompletion = s.integer()
			g.chat.MaxCompletionTokens = &g.fastMaxCompletion
		case "n":
			g.fastN = s.integer()
			c.N = &g.fastN
		case "temperature":
			c.Temperature = s.float(&g.fastTemperature)
		case "top_p":
			c.TopP = s.float(&g.fastTopP)
		case "seed", "frequency_penalty", "presence_penalty":
			if s.Peek() == 'n' && s.Null() {
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
			if g.kind != kindChat || !s.Token('[') {
				s.bad = true
				return
			}
			if s.Token(']') {
				return
			}
			for !s.bad {
				if len(g.chat.Messages) == maxJSONContainers { // the general decoder refuses it
					s.bad = true
					return
				}
				g.chat.Messages = append(g.chat.Messages, chatMessage{})
				m := &g.chat.Messages[len(g.chat.Messages)-1]
				s.object(func(k string) {
					switch k {
					case "role":
						m.Role = s.str()
					case "content":
						if s.Peek() != '"' {
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
				if s.Token(',') {
					continue
				}
				if !s.Token(']') {
					s.bad = true
				}
				return
			}
		case "prompt":
			if g.kind != kindText || s.Peek() != '"' {
				s.bad = true
				return
			}
			start := s.I
			s.str()
			g.text.Prompt = g.bodyCopy[start:s.I]
		default:
			s.bad = true
		}
	})
	return !s.bad && s.AtEnd()
}
