package render

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
	"github.com/lensfn/lensfn/runtime/jsonstr"
)

// Chat and text completions: the non-streamed body (Full) and the streamed chunks, with
// usage and logprobs, byte for byte as vLLM writes them.

const (
	objectChat      = "chat.completion"
	objectChatChunk = "chat.completion.chunk"
	objectText      = "text_completion"
)

// remotePrefillFields are the P/D fields of a prefill answer (fixed, as the reference's).
const remotePrefillFields = `"do_remote_decode":false,"do_remote_prefill":true,"remote_block_ids":["DUMMY_ID"],"remote_engine_id":"DUMMY_ID","remote_host":"DUMMY","remote_port":1234`

// appendHead appends {"id":…,"model":…,"object":…[,"kv_transfer_params":…],"created":…
func appendHead(dst []byte, r *engine.Request, object string, withKV bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, r.ID...)
	dst = append(dst, `","model":`...)
	dst = jsonstr.Append(dst, r.Model)
	dst = append(dst, `,"object":"`...)
	dst = append(dst, object...)
	dst = append(dst, '"')
	if withKV && r.Params.RemoteDecode {
		// The prefill side's answer names where the decode side fetches the KV blocks: in
		// vLLM's kv_transfer_params and, as the specification lists them, at the top level
		// (clients read either).
		dst = append(dst, `,"kv_transfer_params":{`+remotePrefillFields+`,"tp_size":1},`+remotePrefillFields...)
	}
	dst = append(dst, `,"created":`...)
	return strconv.AppendInt(dst, r.Created, 10)
}

func appendUsage(dst []byte, r *engine.Request) []byte {
	completion := r.CompletionTokens()
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.Prompt.Tokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.Prompt.Tokens+completion), 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.Prompt.Cached), 10)
	return append(dst, "}}"...)
}

// Full appends the non-streamed body of a chat or text completion.
func Full(dst []byte, r *engine.Request) []byte {
	object := objectText
	if r.Kind == engine.Chat {
		object = objectChat
	}
	dst = appendHead(dst, r, object, true)
	dst = append(dst, `,"usage":`...)
	dst = appendUsage(dst, r)
	dst = append(dst, `,"choices":[`...)
	for i := range r.Seqs {
		s := &r.Seqs[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(s.Index), 10)
		dst = append(dst, `,"finish_reason":"`...)
		dst = append(dst, s.Finish...)
		dst = append(dst, '"')
		if r.Kind == engine.Chat {
			dst = append(dst, `,"message":{"role":"assistant"`...)
			if len(s.ToolCalls) > 0 {
				dst = appendToolCalls(dst, s.ToolCalls)
			} else {
				dst = append(dst, `,"content":"`...)
				for _, t := range s.Tokens {
					dst = jsonstr.AppendContents(dst, t)
				}
				dst = append(dst, '"')
			}
			dst = append(dst, '}')
			if r.Params.Logprobs {
				dst = appendChatLogprobs(dst, r, s.Tokens)
			}
		} else {
			dst = append(dst, `,"text":"`...)
			if r.Params.Echo {
				dst = jsonstr.AppendContents(dst, s.PromptText)
			}
			for _, t := range s.Tokens {
				dst = jsonstr.AppendContents(dst, t)
			}
			dst = append(dst, '"')
			if r.Params.Logprobs {
				dst = appendTextLogprobs(dst, r, s.Tokens, 0)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
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

func appendChatLogprobEntry(dst []byte, r *engine.Request, tok string) []byte {
	dst = append(dst, `{"token":`...)
	dst = jsonstr.Append(dst, tok)
	dst = append(dst, `,"logprob":`...)
	dst = openai.AppendFloat(dst, engine.Logprob(tok, 0))
	dst = append(dst, `,"bytes":`...)
	dst = appendTokenBytes(dst, tok)
	if r.Params.TopLogprobs > 0 {
		dst = append(dst, `,"top_logprobs":[`...)
		for k := 0; k < r.Params.TopLogprobs; k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			alt := engine.Alternative(tok, k)
			dst = append(dst, `{"token":`...)
			dst = jsonstr.Append(dst, alt)
			dst = append(dst, `,"logprob":`...)
			dst = openai.AppendFloat(dst, engine.Logprob(tok, k))
			dst = append(dst, `,"bytes":`...)
			dst = appendTokenBytes(dst, alt)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func appendChatLogprobs(dst []byte, r *engine.Request, toks []string) []byte {
	dst = append(dst, `,"logprobs":{"content":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendChatLogprobEntry(dst, r, t)
	}
	return append(dst, "]}"...)
}

func appendTextLogprobs(dst []byte, r *engine.Request, toks []string, offset int) []byte {
	dst = append(dst, `,"logprobs":{"tokens":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, t)
	}
	dst = append(dst, `],"token_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = openai.AppendFloat(dst, engine.Logprob(t, 0))
	}
	dst = append(dst, `],"top_logprobs":[`...)
	for i, t := range toks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		for k := 0; k < max(r.Params.TopLogprobs, 1); k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			alt := engine.Alternative(t, k)
			dst = jsonstr.Append(dst, alt)
			dst = append(dst, ':')
			dst = openai.AppendFloat(dst, engine.Logprob(t, k))
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

// appendChunkStart starts a streamed chunk: the SSE data prefix and the head.
func appendChunkStart(dst []byte, r *engine.Request) []byte {
	object := objectText
	if r.Kind == engine.Chat {
		object = objectChatChunk
	}
	dst = appendSSEStart(dst)
	return appendHead(dst, r, object, false)
}

// appendChunkHead starts a streamed chunk of one choice; usage is null except in the
// final usage chunk.
func appendChunkHead(dst []byte, r *engine.Request) []byte {
	dst = appendChunkStart(dst, r)
	return append(dst, `,"usage":null,"choices":[{"index":`...)
}

// appendRoleChunk: the first chat chunk, announcing the assistant role.
func appendRoleChunk(dst []byte, r *engine.Request, s *engine.Sequence) []byte {
	dst = appendChunkHead(dst, r)
	dst = strconv.AppendInt(dst, int64(s.Index), 10)
	dst = append(dst, `,"finish_reason":null,"delta":{"role":"assistant"}}]}`...)
	return appendSSEEnd(dst)
}

// appendTokenChunk carries one token; head is appendChunkHead's output for r (the same for
// every chunk of a stream, so a stream renders it once).
func appendTokenChunk(dst, head []byte, r *engine.Request, s *engine.Sequence, tok string) []byte {
	dst = append(dst, head...)
	dst = strconv.AppendInt(dst, int64(s.Index), 10)
	if r.Kind == engine.Chat {
		dst = append(dst, `,"finish_reason":null,"delta":{"content":`...)
		dst = jsonstr.Append(dst, tok)
		dst = append(dst, '}')
		if r.Params.Logprobs {
			dst = append(dst, `,"logprobs":{"content":[`...)
			dst = appendChatLogprobEntry(dst, r, tok)
			dst = append(dst, "]}"...)
		}
	} else {
		dst = append(dst, `,"finish_reason":null,"text":`...)
		dst = jsonstr.Append(dst, tok)
		if r.Params.Logprobs {
			dst = appendTextLogprobs(dst, r, []string{tok}, s.TextOffset)
		}
	}
	dst = append(dst, "}]}"...)
	return appendSSEEnd(dst)
}

// appendFinishChunk: empty delta (or text) with the finish reason.
func appendFinishChunk(dst []byte, r *engine.Request, s *engine.Sequence) []byte {
	dst = appendChunkHead(dst, r)
	dst = strconv.AppendInt(dst, int64(s.Index), 10)
	dst = append(dst, `,"finish_reason":"`...)
	dst = append(dst, s.Finish...)
	if r.Kind == engine.Chat {
		dst = append(dst, `","delta":{}}]}`...)
	} else {
		dst = append(dst, `","text":""}]}`...)
	}
	return appendSSEEnd(dst)
}

// appendUsageChunk: sent only with stream_options.include_usage.
func appendUsageChunk(dst []byte, r *engine.Request) []byte {
	dst = appendChunkStart(dst, r)
	dst = append(dst, `,"usage":`...)
	dst = appendUsage(dst, r)
	dst = append(dst, `,"choices":[]}`...)
	return appendSSEEnd(dst)
}

func appendDone(dst []byte) []byte { return append(dst, "data: [DONE]\n\n"...) }
