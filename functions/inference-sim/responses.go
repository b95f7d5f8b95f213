package inferencesim

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// The OpenAI Responses API (/v1/responses), text only: the request is
// converted into a chat request (instructions become a system message,
// input the user turns) and goes through the same admission, generation
// and timing; only the rendering differs.

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens *int64          `json:"max_output_tokens"`
	Stream          bool            `json:"stream"`
	Tools           json.RawMessage `json:"tools"`
	Temperature     *float64        `json:"temperature"`
	TopP            *float64        `json:"top_p"`
}

type responsesInputItem struct {
	Type    string                `json:"type"`
	Role    string                `json:"role"`
	Content openai.MessageContent `json:"content"`
}

// decodeResponses fills g.chat from a Responses request.
func (g *genCtx) decodeResponses(body []byte) error {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" && string(t) != "[]" {
		return errors.New("tools are not supported on /v1/responses by this simulator; use /v1/chat/completions")
	}
	c := &g.chat
	c.Model, c.Stream, c.MaxTokens = req.Model, req.Stream, req.MaxOutputTokens
	c.Temperature, c.TopP = req.Temperature, req.TopP
	if req.Instructions != "" {
		c.Messages = append(c.Messages, openai.ChatMessage{Role: "system", Content: openai.MessageContent{Text: req.Instructions}})
	}
	in := bytes.TrimSpace(req.Input)
	switch {
	case len(in) > 0 && in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return err
		}
		c.Messages = append(c.Messages, openai.ChatMessage{Role: "user", Content: openai.MessageContent{Text: s}})
	case len(in) > 0 && in[0] == '[':
		var items []responsesInputItem
		if err := json.Unmarshal(in, &items); err != nil {
			return err
		}
		for _, it := range items {
			role := it.Role
			if role == "" {
				role = "user"
			}
			c.Messages = append(c.Messages, openai.ChatMessage{Role: role, Content: it.Content})
		}
	default:
		return errors.New("input must be a string or an array of input items")
	}
	return nil
}

// appendResponseObject appends the response object; done selects the
// completed form (output and usage) over the in-progress one.
func (g *genCtx) appendResponseObject(dst []byte, done bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, g.id...)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, g.created, 10)
	if !done {
		dst = append(dst, `,"status":"in_progress","model":`...)
		dst = openai.AppendJSONString(dst, g.model)
		return append(dst, `,"output":[],"usage":null}`...)
	}
	c := &g.choices[0]
	dst = append(dst, `,"status":"completed","model":`...)
	dst = openai.AppendJSONString(dst, g.model)
	dst = append(dst, `,"output":[`...)
	dst = g.appendOutputItem(dst, c, true)
	dst = append(dst, `],"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(g.promptTokens), 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(g.cachedTokens), 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(len(c.tokens)), 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(g.promptTokens+len(c.tokens)), 10)
	return append(dst, "}}"...)
}

func (g *genCtx) appendMessageID(dst []byte) []byte {
	dst = append(dst, `"msg_`...)
	dst = append(dst, g.id[len("resp_"):]...)
	return append(dst, '"')
}

func (g *genCtx) appendOutputText(dst []byte, c *choice) []byte {
	dst = append(dst, '"')
	for _, t := range c.tokens {
		dst = openai.AppendJSONStringBody(dst, t)
	}
	return append(dst, '"')
}

func (g *genCtx) appendOutputItem(dst []byte, c *choice, done bool) []byte {
	dst = append(dst, `{"id":`...)
	dst = g.appendMessageID(dst)
	if !done {
		return append(dst, `,"type":"message","status":"in_progress","role":"assistant","content":[]}`...)
	}
	dst = append(dst, `,"type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":`...)
	dst = g.appendOutputText(dst, c)
	return append(dst, `,"annotations":[]}]}`...)
}

// appendEvent starts "event: <type>\ndata: {"type":…,"sequence_number":n".
func (g *genCtx) appendEvent(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(g.seqNo), 10)
	g.seqNo++
	return dst
}

func (g *genCtx) appendPartRef(dst []byte) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = g.appendMessageID(dst)
	return append(dst, `,"output_index":0,"content_index":0`...)
}

// appendResponsesOpening: created, in_progress, output_item.added,
// content_part.added.
func (g *genCtx) appendResponsesOpening(dst []byte, c *choice) []byte {
	for _, typ := range []string{"response.created", "response.in_progress"} {
		dst = g.appendEvent(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = g.appendResponseObject(dst, false)
		dst = append(dst, "}\n\n"...)
	}
	dst = g.appendEvent(dst, "response.output_item.added")
	dst = append(dst, `,"output_index":0,"item":`...)
	dst = g.appendOutputItem(dst, c, false)
	dst = append(dst, "}\n\n"...)
	dst = g.appendEvent(dst, "response.content_part.added")
	dst = g.appendPartRef(dst)
	return append(dst, `,"part":{"type":"output_text","text":"","annotations":[]}}`+"\n\n"...)
}

func (g *genCtx) appendResponsesDelta(dst []byte, tok string) []byte {
	dst = g.appendEvent(dst, "response.output_text.delta")
	dst = g.appendPartRef(dst)
	dst = append(dst, `,"delta":`...)
	dst = openai.AppendJSONString(dst, tok)
	return append(dst, `,"logprobs":[]}`+"\n\n"...)
}

// appendResponsesClosing: output_text.done, content_part.done,
// output_item.done, completed.
func (g *genCtx) appendResponsesClosing(dst []byte, c *choice) []byte {
	dst = g.appendEvent(dst, "response.output_text.done")
	dst = g.appendPartRef(dst)
	dst = append(dst, `,"text":`...)
	dst = g.appendOutputText(dst, c)
	dst = append(dst, `,"logprobs":[]}`+"\n\n"...)
	dst = g.appendEvent(dst, "response.content_part.done")
	dst = g.appendPartRef(dst)
	dst = append(dst, `,"part":{"type":"output_text","text":`...)
	dst = g.appendOutputText(dst, c)
	dst = append(dst, `,"annotations":[]}}`+"\n\n"...)
	dst = g.appendEvent(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":0,"item":`...)
	dst = g.appendOutputItem(dst, c, true)
	dst = append(dst, "}\n\n"...)
	dst = g.appendEvent(dst, "response.completed")
	dst = append(dst, `,"response":`...)
	dst = g.appendResponseObject(dst, true)
	return append(dst, "}\n\n"...)
}
