package render

import (
	"strconv"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/runtime/jsonstr"
)

// The OpenAI Responses API's rendering of a chat request (text only): the response object
// (the non-streamed answer) and its streamed events, numbered by sequence_number.

// ResponseObject appends the response object; done selects the completed form (output
// and usage) over the in-progress one the stream opens with.
func ResponseObject(dst []byte, r *engine.Request, done bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, r.ID...)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, r.Created, 10)
	if !done {
		dst = append(dst, `,"status":"in_progress","model":`...)
		dst = jsonstr.Append(dst, r.Model)
		return append(dst, `,"output":[],"usage":null}`...)
	}
	s := &r.Seqs[0]
	dst = append(dst, `,"status":"completed","model":`...)
	dst = jsonstr.Append(dst, r.Model)
	dst = append(dst, `,"output":[`...)
	dst = appendOutputItem(dst, r, s, true)
	dst = append(dst, `],"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.Prompt.Tokens), 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.Prompt.Cached), 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(len(s.Tokens)), 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.Prompt.Tokens+len(s.Tokens)), 10)
	return append(dst, "}}"...)
}

func appendMessageID(dst []byte, r *engine.Request) []byte {
	dst = append(dst, `"msg_`...)
	dst = append(dst, r.ID[len("resp_"):]...)
	return append(dst, '"')
}

func appendOutputText(dst []byte, s *engine.Sequence) []byte {
	dst = append(dst, '"')
	for _, t := range s.Tokens {
		dst = jsonstr.AppendContents(dst, t)
	}
	return append(dst, '"')
}

func appendOutputItem(dst []byte, r *engine.Request, s *engine.Sequence, done bool) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendMessageID(dst, r)
	if !done {
		return append(dst, `,"type":"message","status":"in_progress","role":"assistant","content":[]}`...)
	}
	dst = append(dst, `,"type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":`...)
	dst = appendOutputText(dst, s)
	return append(dst, `,"annotations":[]}]}`...)
}

// events numbers a Responses stream's events.
type events struct{ next int }

// start appends "event: <type>\ndata: {"type":…,"sequence_number":n".
func (ev *events) start(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(ev.next), 10)
	ev.next++
	return dst
}

func appendPartRef(dst []byte, r *engine.Request) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = appendMessageID(dst, r)
	return append(dst, `,"output_index":0,"content_index":0`...)
}

// opening: created, in_progress, output_item.added, content_part.added.
func (ev *events) opening(dst []byte, r *engine.Request, s *engine.Sequence) []byte {
	for _, typ := range []string{"response.created", "response.in_progress"} {
		dst = ev.start(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = ResponseObject(dst, r, false)
		dst = append(dst, "}\n\n"...)
	}
	dst = ev.start(dst, "response.output_item.added")
	dst = append(dst, `,"output_index":0,"item":`...)
	dst = appendOutputItem(dst, r, s, false)
	dst = append(dst, "}\n\n"...)
	dst = ev.start(dst, "response.content_part.added")
	dst = appendPartRef(dst, r)
	return append(dst, `,"part":{"type":"output_text","text":"","annotations":[]}}`+"\n\n"...)
}

func (ev *events) delta(dst []byte, r *engine.Request, tok string) []byte {
	dst = ev.start(dst, "response.output_text.delta")
	dst = appendPartRef(dst, r)
	dst = append(dst, `,"delta":`...)
	dst = jsonstr.Append(dst, tok)
	return append(dst, `,"logprobs":[]}`+"\n\n"...)
}

// closing: output_text.done, content_part.done, output_item.done, completed.
func (ev *events) closing(dst []byte, r *engine.Request, s *engine.Sequence) []byte {
	dst = ev.start(dst, "response.output_text.done")
	dst = appendPartRef(dst, r)
	dst = append(dst, `,"text":`...)
	dst = appendOutputText(dst, s)
	dst = append(dst, `,"logprobs":[]}`+"\n\n"...)
	dst = ev.start(dst, "response.content_part.done")
	dst = appendPartRef(dst, r)
	dst = append(dst, `,"part":{"type":"output_text","text":`...)
	dst = appendOutputText(dst, s)
	dst = append(dst, `,"annotations":[]}}`+"\n\n"...)
	dst = ev.start(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":0,"item":`...)
	dst = appendOutputItem(dst, r, s, true)
	dst = append(dst, "}\n\n"...)
	dst = ev.start(dst, "response.completed")
	dst = append(dst, `,"response":`...)
	dst = ResponseObject(dst, r, true)
	return append(dst, "}\n\n"...)
}
