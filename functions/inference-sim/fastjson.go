package inferencesim

import "github.com/lensfn/lensfn/functions/inference-sim/internal/openai"

// A fast path for the request shapes that dominate real traffic: a flat
// object with model, messages (string contents) or a string prompt, and
// the common scalar parameters. It decodes without allocating, pointing
// strings into a private copy of the body. Anything else (escaped strings,
// tools, logprobs, array prompts, unknown keys…) makes it give up, and the
// request goes through encoding/json, which handles the full API.

// fastDecode tries the fast path; it reports false when the request needs
// the general decoder. g.bodyCopy holds the strings it returns.
func (g *genCtx) fastDecode(body []byte) bool {
	g.bodyCopy = append(g.bodyCopy[:0], body...)
	var s openai.Scanner
	s.Reset(g.bodyCopy)
	c := &g.chat.CommonRequest
	if g.kind == kindText {
		c = &g.text.CommonRequest
	}
	s.Object(func(key string) {
		switch key {
		case "model":
			c.Model = s.Str()
		case "stream":
			c.Stream = s.Boolean()
		case "ignore_eos":
			c.IgnoreEOS = s.Boolean()
		case "max_tokens":
			g.fastMaxTokens = s.Integer()
			c.MaxTokens = &g.fastMaxTokens
		case "max_completion_tokens":
			if g.kind != kindChat {
				s.Bad = true
				return
			}
			g.fastMaxCompletion = s.Integer()
			g.chat.MaxCompletionTokens = &g.fastMaxCompletion
		case "n":
			g.fastN = s.Integer()
			c.N = &g.fastN
		case "temperature":
			c.Temperature = s.FloatField(&g.fastTemperature)
		case "top_p":
			c.TopP = s.FloatField(&g.fastTopP)
		case "seed", "frequency_penalty", "presence_penalty":
			if s.Peek() == 'n' && s.Null() {
				return
			}
			s.SkipNumber()
		case "stream_options":
			c.StreamOptions = &g.fastStreamOptions
			s.Object(func(k string) {
				if k != "include_usage" {
					s.Bad = true
					return
				}
				g.fastStreamOptions.IncludeUsage = s.Boolean()
			})
		case "messages":
			if g.kind != kindChat || !s.Token('[') {
				s.Bad = true
				return
			}
			if s.Token(']') {
				return
			}
			for !s.Bad {
				if len(g.chat.Messages) == openai.MaxJSONContainers { // the general decoder refuses it
					s.Bad = true
					return
				}
				g.chat.Messages = append(g.chat.Messages, openai.ChatMessage{})
				m := &g.chat.Messages[len(g.chat.Messages)-1]
				s.Object(func(k string) {
					switch k {
					case "role":
						m.Role = s.Str()
					case "content":
						if s.Peek() != '"' {
							s.Bad = true
							return
						}
						m.Content.Text = s.Str()
					case "name":
						m.Name = s.Str()
					default:
						s.Bad = true
					}
				})
				if s.Token(',') {
					continue
				}
				if !s.Token(']') {
					s.Bad = true
				}
				return
			}
		case "prompt":
			if g.kind != kindText || s.Peek() != '"' {
				s.Bad = true
				return
			}
			start := s.I
			s.Str()
			g.text.Prompt = g.bodyCopy[start:s.I]
		default:
			s.Bad = true
		}
	})
	return !s.Bad && s.AtEnd()
}
