package inferencesim

import (
	"crypto/sha1"
	"strconv"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/metrics"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// Finish reasons.
const (
	finishStop           = metrics.FinishStop
	finishLength         = metrics.FinishLength
	finishToolCalls      = "tool_calls"
	finishRemoteDecode   = "remote_decode"
	finishCacheThreshold = "cache_threshold"
)

const (
	objectChat      = "chat.completion"
	objectChatChunk = "chat.completion.chunk"
	objectText      = "text_completion"
)

// appendUUID appends a UUID (version 5 layout) derived from seed, port and
// a per-rank request counter, so ids are reproducible with --seed.
func appendUUID(dst []byte, seed int64, port int, counter uint64) []byte {
	var in [64]byte
	b := strconv.AppendInt(in[:0], seed, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(port), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, counter, 10)
	sum := sha1.Sum(b)
	sum[6] = (sum[6] & 0x0f) | 0x50
	sum[8] = (sum[8] & 0x3f) | 0x80
	for i := 0; i < 16; i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, openai.HexDigits[sum[i]>>4], openai.HexDigits[sum[i]&0xf])
	}
	return dst
}

// appendHead appends {"id":…,"model":…,"object":…[,"kv_transfer_params":…],"created":…
func (g *genCtx) appendHead(dst []byte, object string, withKV bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, g.id...)
	dst = append(dst, `","model":`...)
	dst = openai.AppendJSONString(dst, g.model)
	dst = append(dst, `,"object":"`...)
	dst = append(dst, object...)
	dst = append(dst, '"')
	if withKV && g.remoteDecode {
		dst = append(dst, `,"kv_transfer_params":{"do_remote_decode":false,"do_remote_prefill":true,"remote_block_ids":["DUMMY_ID"],"remote_engine_id":"DUMMY_ID","remote_host":"DUMMY","remote_port":1234,"tp_size":1}`...)
	}
	dst = append(dst, `,"created":`...)
	return strconv.AppendInt(dst, g.created, 10)
}

func (g *genCtx) appendUsage(dst []byte) []byte {
	completion := 0
	for i := range g.choices {
		completion += g.choices[i].completionTokens()
	}
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(g.promptTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(g.promptTokens+completion), 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(g.cachedTokens), 10)
	return append(dst, "}}"...)
}

// appendFullResponse appends the non-streamed response body.
func (g *genCtx) appendFullResponse(dst []byte) []byte {
	object := objectText
	if g.kind == kindChat {
		object = objectChat
	}
	dst = g.appendHead(dst, object, true)
	dst = append(dst, `,"usage":`...)
	dst = g.appendUsage(dst)
	dst = append(dst, `,"choices":[`...)
	for i := range g.choices {
		c := &g.choices[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(c.index), 10)
		dst = append(dst, `,"finish_reason":"`...)
		dst = append(dst, c.finish...)
		dst = append(dst, '"')
		if g.kind == kindChat {
			dst = append(dst, `,"message":{"role":"assistant"`...)
			if len(c.toolCalls) > 0 {
				dst = appendToolCalls(dst, c.toolCalls)
			} else {
				dst = append(dst, `,"content":"`...)
				for _, t := range c.tokens {
					dst = openai.AppendJSONStringBody(dst, t)
				}
				dst = append(dst, '"')
			}
			dst = append(dst, '}')
			if g.logprobs {
				dst = g.appendChatLogprobs(dst, c.tokens)
			}
		} else {
			dst = append(dst, `,"text":"`...)
			if g.echoPrompt {
				dst = openai.AppendJSONStringBody(dst, c.promptText)
			}
			for _, t := range c.tokens {
				dst = openai.AppendJSONStringBody(dst, t)
			}
			dst = append(dst, '"')
			if g.logprobs {
				dst = g.appendTextLogprobs(dst, c.tokens, 0)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// Simulated log-probabilities: deterministic functions of the token, so
// a response is reproducible.
func fakeLogprob(tok string, rank int) float64 {
	h := textgen.TokenID(tok)
	return -float64(h%1000)/1000.0 - float64(rank)*0.5
}

func appendTokenBytes(dst []byte, tok string) []byte {
	dst = append(dst, '[')
	for i := 0; i < len(tok); i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(tok[i]), 10)
	}
	return append(dst, ']')
}

func (g *genCtx) appendChatLogprobEntry(dst []byte, tok string) []byte {
	dst = append(dst, `{"token":`...)
	dst = openai.AppendJSONString(dst, tok)
	dst = append(dst, `,"logprob":`...)
	dst = openai.AppendFloat(dst, fakeLogprob(tok, 0))
	dst = append(dst, `,"bytes":`...)
	dst = appendTokenBytes(dst, tok)
	if g.topLogprobs > 0 {
		dst = append(dst, `,"top_logprobs":[`...)
		for k := 0; k < g.topLogprobs; k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			alt := tok
			if k > 0 {
				alt = textgen.PresetToken(int(textgen.TokenID(tok)) + k)
			}
			dst = append(dst, `{"token":`...)
			dst = openai.AppendJSONString(dst, alt)
			dst = append(dst, `,"logprob":`...)
			dst = openai.AppendFloat(dst, fakeLogprob(tok, k))
			dst = append(dst, `,"bytes":`...)
			dst = appendTokenBytes(dst, alt)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func (g *genCtx) appendChatLogprobs(dst []byte, toks []string) []byte {
	dst = append(dst, `,"logprobs":{"content":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = g.appendChatLogprobEntry(dst, t)
	}
	return append(dst, "]}"...)
}

func (g *genCtx) appendTextLogprobs(dst []byte, toks []string, offset int) []byte {
	dst = append(dst, `,"logprobs":{"tokens":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = openai.AppendJSONString(dst, t)
	}
	dst = append(dst, `],"token_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = openai.AppendFloat(dst, fakeLogprob(t, 0))
	}
	dst = append(dst, `],"top_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		for k := 0; k < max(g.topLogprobs, 1); k++ {
			alt := t
			if k > 0 {
				alt = textgen.PresetToken(int(textgen.TokenID(t)) + k)
				dst = append(dst, ',')
			}
			dst = openai.AppendJSONString(dst, alt)
			dst = append(dst, ':')
			dst = openai.AppendFloat(dst, fakeLogprob(t, k))
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"text_offset":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(offset), 10)
		offset += len(t)
	}
	return append(dst, "]}"...)
}

// SSE frames.

func appendSSEStart(dst []byte) []byte { return append(dst, "data: "...) }
func appendSSEEnd(dst []byte) []byte   { return append(dst, "\n\n"...) }

// appendChunkHead starts a streamed chunk; usage is null except in the
// final usage chunk.
func (g *genCtx) appendChunkHead(dst []byte) []byte {
	object := objectText
	if g.kind == kindChat {
		object = objectChatChunk
	}
	dst = appendSSEStart(dst)
	dst = g.appendHead(dst, object, false)
	return append(dst, `,"usage":null,"choices":[{"index":`...)
}

// appendRoleChunk: the first chat chunk, announcing the assistant role.
func (g *genCtx) appendRoleChunk(dst []byte, c *choice) []byte {
	dst = g.appendChunkHead(dst)
	dst = strconv.AppendInt(dst, int64(c.index), 10)
	dst = append(dst, `,"finish_reason":null,"delta":{"role":"assistant"}}]}`...)
	return appendSSEEnd(dst)
}

// appendTokenChunk carries one token.
func (g *genCtx) appendTokenChunk(dst []byte, c *choice, tok string) []byte {
	dst = g.appendChunkHead(dst)
	dst = strconv.AppendInt(dst, int64(c.index), 10)
	if g.kind == kindChat {
		dst = append(dst, `,"finish_reason":null,"delta":{"content":`...)
		dst = openai.AppendJSONString(dst, tok)
		dst = append(dst, '}')
		if g.logprobs {
			dst = append(dst, `,"logprobs":{"content":[`...)
			dst = g.appendChatLogprobEntry(dst, tok)
			dst = append(dst, "]}"...)
		}
	} else {
		dst = append(dst, `,"finish_reason":null,"text":`...)
		dst = openai.AppendJSONString(dst, tok)
		if g.logprobs {
			dst = g.appendTextLogprobs(dst, []string{tok}, c.textOffset)
		}
	}
	dst = append(dst, "}]}"...)
	return appendSSEEnd(dst)
}

// appendFinishChunk: empty delta (or text) with the finish reason.
func (g *genCtx) appendFinishChunk(dst []byte, c *choice) []byte {
	dst = g.appendChunkHead(dst)
	dst = strconv.AppendInt(dst, int64(c.index), 10)
	dst = append(dst, `,"finish_reason":"`...)
	dst = append(dst, c.finish...)
	if g.kind == kindChat {
		dst = append(dst, `","delta":{}}]}`...)
	} else {
		dst = append(dst, `","text":""}]}`...)
	}
	return appendSSEEnd(dst)
}

// appendUsageChunk: sent only with stream_options.include_usage.
func (g *genCtx) appendUsageChunk(dst []byte) []byte {
	object := objectText
	if g.kind == kindChat {
		object = objectChatChunk
	}
	dst = appendSSEStart(dst)
	dst = g.appendHead(dst, object, false)
	dst = append(dst, `,"usage":`...)
	dst = g.appendUsage(dst)
	dst = append(dst, `,"choices":[]}`...)
	return appendSSEEnd(dst)
}

func appendDone(dst []byte) []byte { return append(dst, "data: [DONE]\n\n"...) }
