package openai

import (
	"encoding/json"
)

// Body is a generation request as read from the wire: the chat or the text completion
// structs (one of them is used), and what the fast decoder (fastdecode.go) needs to point
// into instead of allocating. It is reused across requests; Reset keeps its storage.
type Body struct {
	Chat ChatRequest
	Text CompletionRequest
	fast fastFields
}

// fastFields are the fast decoder's backing values: the private copy of the body its
// strings point into and the scalars its pointers point at.
type fastFields struct {
	copy          []byte
	maxTokens     int64
	maxCompletion int64
	n             int64
	temperature   float64
	topP          float64
	streamOptions StreamOptions
}

// Common is the part of the request chat and text completions share.
func (b *Body) Common(chat bool) *CommonRequest {
	if chat {
		return &b.Chat.CommonRequest
	}
	return &b.Text.CommonRequest
}

// Decode reads a chat (chat true) or text completion body: the allocation-free fast path
// when the body has the common flat shape, else the bounds on its JSON shape and
// encoding/json, which handles the full API.
func (b *Body) Decode(body []byte, chat bool) *Error {
	if b.fastDecode(body, chat) {
		return nil
	}
	if e := CheckJSONShape(body); e != nil {
		return e
	}
	b.clear()
	var err error
	if chat {
		err = json.Unmarshal(body, &b.Chat)
	} else {
		err = json.Unmarshal(body, &b.Text)
	}
	return parseError(err)
}

// DecodeResponses reads a Responses API body into b.Chat (responses.go).
func (b *Body) DecodeResponses(body []byte) *Error {
	if e := CheckJSONShape(body); e != nil {
		return e
	}
	return parseError(decodeResponses(body, &b.Chat))
}

func parseError(err error) *Error {
	if err == nil {
		return nil
	}
	return NewError(400, "Failed to read and parse request body, "+err.Error())
}

// clear empties the decoded request, keeping the messages' and the body copy's storage.
func (b *Body) clear() {
	msgs := b.Chat.Messages[:cap(b.Chat.Messages)]
	clear(msgs)
	b.Chat = ChatRequest{Messages: msgs[:0]}
	b.Text = CompletionRequest{}
	b.fast.streamOptions = StreamOptions{}
}

// Reset readies b for the next request; a body copy over keep bytes is dropped so one huge
// request does not pin its buffer in a pool.
func (b *Body) Reset(keep int) {
	b.clear()
	cp := b.fast.copy[:0]
	if cap(cp) > keep {
		cp = nil
	}
	b.fast = fastFields{copy: cp}
}
