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

// appendContentText appends a JSON string's text, the texts of an array
// of strings or content parts ({"type":"text","text":…}) or the raw bytes
// of anything else (token ids), so equal content always hashes equally.
func appendContentText(dst []byte, raw json.RawMessage) []byte {
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
						dst = appendContentText(dst, cp.Content)
						continue
					}
				}
				dst = appendContentText(dst, part)
			}
			return dst
		}
	}
	return append(dst, raw...)
}

// FNV-64a.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnv64a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

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

// tokenBlockHasher computes the block hashes the simulator's KV cache (and
// llm-d's kv-block indexer) publishes in BlockStored events: FNV-64a of the
// canonical CBOR encoding of [parent, tokens, null], the chain rooted at
// the hash of [FNV-64a(hash seed), null, model]. The router has to compute
// them itself to look a request up in what the events reported; the
// precise-prefix HTTP test checks them against a real simulator's events.
type tokenBlockHasher struct {
	blockSize int
	seedHash  uint64
}

func newTokenBlockHasher(blockSize int, hashSeed string) tokenBlockHasher {
	return tokenBlockHasher{blockSize: blockSize, seedHash: fnv64a(fnvOffset64, []byte(hashSeed))}
}

func appendCBORHead(dst []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(dst, m|byte(n))
	case n <= 0xff:
		return append(dst, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), n)
}

// appendHashes appends the hashes of every full block of tokens for model
// (at most limit of them).
func (h tokenBlockHasher) appendHashes(dst []uint64, model string, tokens []uint32, limit int) []uint64 {
	buf := make([]byte, 0, 16+9*h.blockSize)
	buf = append(buf, 0x83)
	buf = appendCBORHead(buf, 0, h.seedHash)
	buf = append(buf, 0xf6)
	buf = appendCBORHead(buf, 3, uint64(len(model)))
	buf = append(buf, model...)
	parent := fnv64a(fnvOffset64, buf)
	for i := 0; i+h.blockSize <= len(tokens) && len(dst) < limit; i += h.blockSize {
		buf = append(buf[:0], 0x83)
		buf = appendCBORHead(buf, 0, parent)
		buf = appendCBORHead(buf, 4, uint64(h.blockSize))
		for _, t := range tokens[i : i+h.blockSize] {
			buf = appendCBORHead(buf, 0, uint64(t))
		}
		buf = append(buf, 0xf6)
		parent = fnv64a(fnvOffset64, buf)
		dst = append(dst, parent)
	}
	return dst
}
