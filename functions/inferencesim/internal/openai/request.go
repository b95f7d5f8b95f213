package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Wire types of the generation requests. Unknown fields are ignored, as
// vLLM does, so clients that send extra OpenAI parameters keep working.

type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// RemoteParams are the P/D fields: under kv_transfer_params (vLLM's form) and at the top
// level of a request (the specification's form; vLLM clients send either). The flags count,
// the remote_* are accepted.
type RemoteParams struct {
	DoRemoteDecode  bool            `json:"do_remote_decode"`
	DoRemotePrefill bool            `json:"do_remote_prefill"`
	RemoteBlockIDs  json.RawMessage `json:"remote_block_ids"`
	RemoteEngineID  json.RawMessage `json:"remote_engine_id"`
	RemoteHost      json.RawMessage `json:"remote_host"`
	RemotePort      json.RawMessage `json:"remote_port"`
}

type KVTransferParams struct {
	RemoteParams
}

// CommonRequest holds the fields shared by chat and text completions.
type CommonRequest struct {
	Model             string            `json:"model"`
	Stream            bool              `json:"stream"`
	StreamOptions     *StreamOptions    `json:"stream_options"`
	MaxTokens         *int64            `json:"max_tokens"`
	N                 *int64            `json:"n"`
	IgnoreEOS         bool              `json:"ignore_eos"`
	KVTransferParams  *KVTransferParams `json:"kv_transfer_params"`
	RemoteParams                        // the P/D fields at the top level
	CacheHitThreshold *float64          `json:"cache_hit_threshold"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
}

type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// MessageContent is a chat message's content: a string, an array of
// parts (text parts are used), or null.
type MessageContent struct {
	Text string
}

func (c *MessageContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == 'n' {
		c.Text = ""
		return nil
	}
	if b[0] == '"' {
		return json.Unmarshal(b, &c.Text)
	}
	if b[0] != '[' {
		return errors.New("content must be a string or an array of content parts")
	}
	var parts []ContentPart
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	var sb strings.Builder
	for i, p := range parts {
		if p.Type == "text" {
			if i > 0 && sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(p.Text)
		}
	}
	c.Text = sb.String()
	return nil
}

type ChatMessage struct {
	Role    string         `json:"role"`
	Content MessageContent `json:"content"`
	Name    string         `json:"name"`
}

type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type ToolDef struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

type ChatRequest struct {
	CommonRequest
	Messages            []ChatMessage   `json:"messages"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         *int64          `json:"top_logprobs"`
	Tools               []ToolDef       `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

type CompletionRequest struct {
	CommonRequest
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int64          `json:"logprobs"`
	Echo     bool            `json:"echo"`
}

// Prompt is one entry of a completion request's prompt: text or token ids.
type Prompt struct {
	Text   string
	IDs    []int64
	IsIDs  bool
	Tokens int // prompt length in tokens, set by tokenizePrompt
}

// ParsePrompts accepts a string, a list of strings, a list of token ids
// or a list of lists of token ids; a list of more than limit prompts is
// refused before it is decoded.
func ParsePrompts(raw json.RawMessage, limit int) ([]Prompt, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("prompt is required")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []Prompt{{Text: s}}, nil
	case '[':
	default:
		return nil, errors.New("prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids")
	}
	if inner := bytes.TrimLeft(raw[1:], " \t\r\n"); len(inner) > 0 && (inner[0] == '"' || inner[0] == '[') {
		if n := CountArrayItems(raw, limit); n > limit {
			return nil, fmt.Errorf("prompt: at most %d prompts per request", limit)
		}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, errors.New("prompt must not be empty")
	}
	first := bytes.TrimSpace(items[0])
	switch {
	case len(first) > 0 && first[0] == '"':
		out := make([]Prompt, len(items))
		for i, it := range items {
			if err := json.Unmarshal(it, &out[i].Text); err != nil {
				return nil, fmt.Errorf("prompt[%d]: all prompts of a list must be strings", i)
			}
		}
		return out, nil
	case len(first) > 0 && first[0] == '[':
		out := make([]Prompt, len(items))
		for i, it := range items {
			if err := json.Unmarshal(it, &out[i].IDs); err != nil {
				return nil, fmt.Errorf("prompt[%d]: must be a list of token ids", i)
			}
			if len(out[i].IDs) == 0 {
				return nil, fmt.Errorf("prompt[%d] is empty", i)
			}
			out[i].IsIDs = true
		}
		return out, nil
	default:
		var ids []int64
		if err := json.Unmarshal(raw, &ids); err != nil {
			return nil, errors.New("prompt: a list must hold only strings, only token ids or only lists of token ids")
		}
		return []Prompt{{IDs: ids, IsIDs: true}}, nil
	}
}

// PlainJSONString returns the contents of a JSON string literal that
// needs no unescaping (no backslash, valid UTF-8), viewing raw's bytes.
func PlainJSONString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return UnsafeString(body), true
}

// IDsText renders token ids as "1,2,3" (echo of token-id prompts).
func IDsText(ids []int64) string {
	b := make([]byte, 0, len(ids)*6)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// ToolChoice is the decoded tool_choice.
type ToolChoice struct {
	Mode string // "none", "auto", "required" or "function"
	Name string
}

func ParseToolChoice(raw json.RawMessage, haveTools bool) (ToolChoice, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if haveTools {
			return ToolChoice{Mode: "auto"}, nil
		}
		return ToolChoice{Mode: "none"}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return ToolChoice{}, err
		}
		switch s {
		case "none", "auto", "required":
			return ToolChoice{Mode: s}, nil
		}
		return ToolChoice{}, fmt.Errorf("tool_choice %q is not one of none, auto, required", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return ToolChoice{}, fmt.Errorf("tool_choice: %v", err)
	}
	if named.Function.Name == "" {
		return ToolChoice{}, errors.New("tool_choice: a named tool choice needs function.name")
	}
	return ToolChoice{Mode: "function", Name: named.Function.Name}, nil
}

// ChatRoles are the message roles vLLM's chat templates accept.
var ChatRoles = []string{"system", "developer", "user", "assistant", "tool", "function"}

// CheckSampling refuses what vLLM's SamplingParams refuses (400).
func CheckSampling(c *CommonRequest) *Error {
	if t := c.Temperature; t != nil && !(*t >= 0) {
		return NewParamError(400, "temperature must be non-negative, got "+strconv.FormatFloat(*t, 'g', -1, 64)+".", "temperature")
	}
	if p := c.TopP; p != nil && !(*p > 0 && *p <= 1) {
		return NewParamError(400, "top_p must be in (0, 1], got "+strconv.FormatFloat(*p, 'g', -1, 64)+".", "top_p")
	}
	return nil
}

// CheckRoles refuses a message whose role no chat template knows.
func CheckRoles(msgs []ChatMessage) *Error {
	for i := range msgs {
		if !slices.Contains(ChatRoles, msgs[i].Role) {
			return NewParamError(400, "messages["+strconv.Itoa(i)+"].role "+strconv.Quote(msgs[i].Role)+
				" is not one of "+strings.Join(ChatRoles, ", ")+".", "messages")
		}
	}
	return nil
}
