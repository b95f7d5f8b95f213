package openai

// A fast path for the request shapes that dominate real traffic: a flat
// object with model, messages (string contents) or a string prompt, and
// the common scalar parameters. It decodes without allocating, pointing
// strings into a private copy of the body. Anything else (escaped strings,
// tools, logprobs, array prompts, unknown keys…) makes it give up, and the
// request goes through encoding/json, which handles the full API.

// fastDecode tries the fast path; it reports false when the request needs
// the general decoder. b.fast.copy holds the strings it returns.
func (b *Body) fastDecode(body []byte, chat bool) bool {
	f := &b.fast
	f.copy = append(f.copy[:0], body...)
	var s Scanner
	s.Reset(f.copy)
	c := b.Common(chat)
	s.Object(func(key string) {
		switch key {
		case "model":
			c.Model = s.Str()
		case "stream":
			c.Stream = s.Boolean()
		case "ignore_eos":
			c.IgnoreEOS = s.Boolean()
		case "max_tokens":
			f.maxTokens = s.Integer()
			c.MaxTokens = &f.maxTokens
		case "max_completion_tokens":
			if !chat {
				s.Bad = true
				return
			}
			f.maxCompletion = s.Integer()
			b.Chat.MaxCompletionTokens = &f.maxCompletion
		case "n":
			f.n = s.Integer()
			c.N = &f.n
		case "temperature":
			c.Temperature = s.FloatField(&f.temperature)
		case "top_p":
			c.TopP = s.FloatField(&f.topP)
		case "seed", "frequency_penalty", "presence_penalty", "min_tokens": // read and dropped, as the general decoder drops them
			if s.Peek() == 'n' && s.Null() {
				return
			}
			s.SkipNumber()
		case "stream_options":
			c.StreamOptions = &f.streamOptions
			s.Object(func(k string) {
				if k != "include_usage" {
					s.Bad = true
					return
				}
				f.streamOptions.IncludeUsage = s.Boolean()
			})
		case "messages":
			if !chat || !s.Token('[') {
				s.Bad = true
				return
			}
			if s.Token(']') {
				return
			}
			for !s.Bad {
				if len(b.Chat.Messages) == MaxJSONContainers { // the general decoder refuses it
					s.Bad = true
					return
				}
				b.Chat.Messages = append(b.Chat.Messages, ChatMessage{})
				m := &b.Chat.Messages[len(b.Chat.Messages)-1]
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
			if chat || s.Peek() != '"' {
				s.Bad = true
				return
			}
			start := s.I
			s.Str()
			b.Text.Prompt = f.copy[start:s.I]
		default:
			s.Bad = true
		}
	})
	return !s.Bad && s.AtEnd()
}
