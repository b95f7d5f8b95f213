package inferencerouter

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

// promptRequest is the part of an OpenAI request body the router reads.
type promptRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	Messages []chatMessage   `json:"messages"`
	Prompt   json.RawMessage `json:"prompt"`
	Input    json.RawMessage `json:"input"` // /v1/responses
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// peekPrompt decodes the routing-relevant fields of a request body.
func peekPrompt(body []byte) (promptRequest, error) {
	var p promptRequest
	if err := json.Unmarshal(body, &p); err != nil {
		return p, errors.New("Failed to read and parse request body, " + err.Error())
	}
	return p, nil
}

// appendPromptText appends the bytes the approximate prefix index hashes:
// each message's role and text, or the (first) completion prompt, or the
// Responses input, as the replica would see them in order.
func (p *promptRequest) appendPromptText(dst []byte) []byte {
	if len(p.Messages) > 0 {
		for _, m := range p.Messages {
			dst = append(dst, m.Role...)
			dst = append(dst, 0)
			dst = appendContentText(dst, m.Content)
			dst = append(dst, 0)
		}
		return dst
	}
	raw := p.Prompt
	if len(raw) == 0 || string(raw) == "null" {
		raw = p.Input
	}
	if string(raw) == "null" {
		return dst
	}
	return appendContentText(dst, raw)
}

// maxContentDepth is how deep content is read for its text: a message's
// (or a Responses input's) content, and the content of the items in it
// (a Responses input item's parts). OpenAI content goes no deeper; below
// this its raw bytes are hashed instead, so a body nested thousands deep
// costs a bounded number of passes over its bytes, not one per level.
const maxContentDepth = 2

// appendContentText appends a JSON string's text, the texts of an array
// of strings or content parts ({"type":"text","text":…}, a part's own
// content read too, down to maxContentDepth) or the raw bytes of anything
// else (token ids), so equal content always hashes equally.
func appendContentText(dst []byte, raw json.RawMessage) []byte {
	return appendContentTextAt(dst, raw, 1)
}

func appendContentTextAt(dst []byte, raw json.RawMessage, depth int) []byte {
	if len(raw) == 0 {
		return dst
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return append(dst, s...)
		}
	case '[':
		if depth > maxContentDepth {
			break
		}
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) == nil && len(parts) > 0 && (parts[0][0] == '"' || parts[0][0] == '{') {
			for _, part := range parts {
				if part[0] == '{' {
					var cp struct {
						Text    string          `json:"text"`
						Content json.RawMessage `json:"content"`
					}
					if json.Unmarshal(part, &cp) == nil {
						dst = append(dst, cp.Text...)
						dst = appendContentTextAt(dst, cp.Content, depth+1)
						continue
					}
				}
				dst = appendContentTextAt(dst, part, depth+1)
			}
			return dst
		}
	}
	return append(dst, raw...)
}

// fnv64a continues an FNV-64a hash over b (hash/fnv's hasher would
// allocate per block).
func fnv64a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

const fnvOffset64 = 14695981039346656037

// appendTextBlockHashes appends the chained hashes of every full block of
// blockBytes bytes of text: block i's hash covers block i and, through its
// parent, every block before it, as vLLM's prefix cache chains them.
func appendTextBlockHashes(dst []uint64, text []byte, blockBytes int, limit int) []uint64 {
	parent := uint64(fnvOffset64)
	for i := 0; i+blockBytes <= len(text) && len(dst) < limit; i += blockBytes {
		var pb [8]byte
		binary.LittleEndian.PutUint64(pb[:], parent)
		parent = fnv64a(fnv64a(fnvOffset64, pb[:]), text[i:i+blockBytes])
		dst = append(dst, parent)
	}
	return dst
}
