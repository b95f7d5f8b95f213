package engine

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/limits"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// Prompt is the request's tokenized prompt and what the prefix KV cache made of it, with the
// scratch buffers kept across requests. A chat request has one prompt (its messages,
// flattened into Flat); a text completion may have several (Texts).
type Prompt struct {
	Tokens    int  // over every prompt
	Cached    int  // tokens the prefix cache already held
	CacheMiss bool // the cache hit rate was below the request's threshold

	Texts []openai.Prompt // text completions
	Flat  []byte          // chat: the messages as the reference tokenizes them

	store    [1]openai.Prompt
	ids      []uint32 // the first prompt's token ids, when the KV cache needs them
	keyIDs   []uint32 // scratch: the token ids of the prompt a dataset answer is looked up for
	kvBlocks []uint64 // the blocks pinned in the KV cache
}

// reset empties p, keeping its buffers (within keepBytes).
func (p *Prompt) reset() Prompt {
	flat := p.Flat[:0]
	if cap(flat) > keepBytes {
		flat = nil
	}
	keyIDs := p.keyIDs[:0]
	if cap(keyIDs) > keepBytes/4 {
		keyIDs = nil
	}
	return Prompt{Flat: flat, ids: p.ids[:0], keyIDs: keyIDs, kvBlocks: p.kvBlocks[:0]}
}

// IDs are the first prompt's token ids when the request kept them (the KV cache and the
// engine model hash them into blocks).
func (p *Prompt) IDs() []uint32 { return p.ids }

// Hash is the dataset key of prompt i (PromptHash of its token ids): a chat's flattened
// messages, a text completion's i-th prompt. The first prompt's ids are reused when the KV
// cache already needed them.
func (p *Prompt) Hash(tok textgen.Tokenizer, kind Kind, i int) []byte {
	if i == 0 && len(p.ids) > 0 {
		return PromptHash(p.ids)
	}
	ids := p.keyIDs[:0]
	switch {
	case kind == Chat:
		ids = tok.AppendIDs(ids, openai.UnsafeString(p.Flat))
	case p.Texts[i].IsIDs:
		for _, id := range p.Texts[i].IDs {
			ids = append(ids, uint32(id))
		}
	default:
		ids = tok.AppendIDs(ids, p.Texts[i].Text)
	}
	p.keyIDs = ids
	return PromptHash(ids)
}

// readTexts takes a text completion's prompts: a string, strings, token ids or lists of
// them, at most limits.MaxSequences sequences with n of each.
func (p *Prompt) readTexts(raw []byte, n int) *openai.Error {
	if text, ok := openai.PlainJSONString(raw); ok {
		// the common single string prompt, without allocating
		p.store[0] = openai.Prompt{Text: text}
		p.Texts = p.store[:1]
	} else {
		ps, err := openai.ParsePrompts(raw, limits.MaxSequences)
		if err != nil {
			return openai.NewParamError(400, err.Error(), "prompt")
		}
		p.Texts = ps
	}
	if len(p.Texts)*n > limits.MaxSequences {
		return openai.NewParamError(400, "prompts x n must be at most "+strconv.Itoa(limits.MaxSequences)+", got "+
			strconv.Itoa(len(p.Texts))+" x "+strconv.Itoa(n)+".", "n")
	}
	return nil
}

// tokenize counts the prompt's tokens (and the first prompt's ids when needIDs: the KV
// cache hashes them) and returns the longest prompt's length and what the answer calls it.
func (p *Prompt) tokenize(tok textgen.Tokenizer, kind Kind, msgs []openai.ChatMessage, needIDs bool) (longest int, what string) {
	if kind == Chat {
		p.Flat = AppendChatPrompt(p.Flat[:0], msgs)
		s := openai.UnsafeString(p.Flat)
		if needIDs {
			p.ids = tok.AppendIDs(p.ids[:0], s)
			p.Tokens = len(p.ids)
		} else {
			p.Tokens = tok.Count(s)
		}
		return p.Tokens, "messages"
	}
	for i := range p.Texts {
		t := &p.Texts[i]
		n := len(t.IDs)
		switch {
		case t.IsIDs:
		case needIDs && i == 0: // one walk gives both the ids and their count
			p.ids = tok.AppendIDs(p.ids[:0], t.Text)
			n = len(p.ids)
		default:
			n = tok.Count(t.Text)
		}
		t.Tokens = n
		p.Tokens += n
		longest = max(longest, n)
	}
	if needIDs && len(p.Texts) > 0 && p.Texts[0].IsIDs {
		for _, id := range p.Texts[0].IDs {
			p.ids = append(p.ids, uint32(id))
		}
	}
	return longest, "prompt"
}

// checkContext refuses a prompt (with max_tokens) longer than the context window, with
// vLLM's messages.
func checkContext(longest int, what string, params *Params, maxLen int) *openai.Error {
	if params.MaxTokensSet && longest+params.MaxTokens > maxLen {
		return openai.NewError(400, "This model's maximum context length is "+strconv.Itoa(maxLen)+
			" tokens. However, you requested "+strconv.Itoa(longest+params.MaxTokens)+" tokens ("+
			strconv.Itoa(longest)+" in the "+what+", "+strconv.Itoa(params.MaxTokens)+
			" in the completion). Please reduce the length of the "+what+" or completion.")
	}
	if longest >= maxLen {
		return openai.NewError(400, "This model's maximum context length is "+strconv.Itoa(maxLen)+
			" tokens. However, your "+what+" resulted in "+strconv.Itoa(longest)+
			" tokens. Please reduce the length of the "+what+".")
	}
	return nil
}

// AppendChatPrompt flattens messages the way the reference tokenizes chat:
// "### <role>: <text>\n" per message.
func AppendChatPrompt(b []byte, msgs []openai.ChatMessage) []byte {
	for i := range msgs {
		b = append(b, "### "...)
		b = append(b, msgs[i].Role...)
		b = append(b, ": "...)
		b = append(b, msgs[i].Content.Text...)
		b = append(b, '\n')
	}
	return b
}

// lastUserText is what echo mode answers a chat with.
func lastUserText(msgs []openai.ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content.Text
		}
	}
	return msgs[len(msgs)-1].Content.Text
}
