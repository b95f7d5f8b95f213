package openai

import (
	"bytes"
	"encoding/json"
	"errors"
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
	Type    string         `json:"type"`
	Role    string         `json:"role"`
	Content MessageContent `json:"content"`
}

// decodeResponses fills c from a Responses request.
func decodeResponses(body []byte, c *ChatRequest) error {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" && string(t) != "[]" {
		return errors.New("tools are not supported on /v1/responses by this simulator; use /v1/chat/completions")
	}
	c.Model, c.Stream, c.MaxTokens = req.Model, req.Stream, req.MaxOutputTokens
	c.Temperature, c.TopP = req.Temperature, req.TopP
	if req.Instructions != "" {
		c.Messages = append(c.Messages, ChatMessage{Role: "system", Content: MessageContent{Text: req.Instructions}})
	}
	in := bytes.TrimSpace(req.Input)
	switch {
	case len(in) > 0 && in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return err
		}
		c.Messages = append(c.Messages, ChatMessage{Role: "user", Content: MessageContent{Text: s}})
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
			c.Messages = append(c.Messages, ChatMessage{Role: role, Content: it.Content})
		}
	default:
		return errors.New("input must be a string or an array of input items")
	}
	return nil
}
