package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// NewHTTPClient is the client a run uses unless Config.Client is set: keep-alive connections
// with no cap per host (an open-loop replay may have thousands in flight), no global timeout
// (each request gets its own deadline), and no transparent gzip, which would buffer SSE.
func NewHTTPClient() *http.Client { return newHTTPClient(nil) }

// Per-connection buffers of the engine's transport. Every open connection holds both for its
// lifetime, so they set the engine's memory at high concurrency: at 32 KiB each, a closed loop
// of 4,096 held 256 MiB in buffers alone (the benchmark-runner's peak RSS was 309 MB). Reads
// need little: SSE lines go through the stream's own pooled reader, and bufio reads a large
// non-streamed body straight into the caller's slice. 8 KiB of write buffer sends a prompt of
// ~1,500 tokens with its headers in one write; longer ones take a few more.
const (
	connWriteBuffer = 8 << 10
	connReadBuffer  = 4 << 10
)

// TuneTransport applies the engine's tuning to t: no cap on idle connections per host, no
// transparent gzip, HTTP/2 when the server offers it, and the per-connection buffers above.
// A caller with its own transport (the benchmark-runner's, which dials through an egress
// policy) applies it so both clients behave, and cost, the same.
func TuneTransport(t *http.Transport) {
	t.ForceAttemptHTTP2 = true
	t.MaxIdleConns = 0 // no global cap
	t.MaxIdleConnsPerHost = 1 << 16
	t.DisableCompression = true
	t.WriteBufferSize, t.ReadBufferSize = connWriteBuffer, connReadBuffer
}

// newHTTPClient is NewHTTPClient dialling through dial (nil: directly, through any proxy the
// environment names).
func newHTTPClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	proxy := http.ProxyFromEnvironment
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	} else {
		proxy = nil // a proxy would connect past the policy
	}
	t := &http.Transport{
		Proxy:                 proxy,
		DialContext:           dial,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	TuneTransport(t)
	return &http.Client{Transport: t}
}

// Why a request's context ended; Record.Error says which.
var (
	errRunEnded   = errors.New("run ended")
	errRunStopped = errors.New("run stopped")
)

type requestTimeoutError struct{ after time.Duration }

func (e requestTimeoutError) Error() string {
	return fmt.Sprintf("timeout: no complete response within %s", e.after)
}

// ended: a request with deadline (zero: none) was cut short, by the run's end or stop or by
// its own timeout, so a failed read is that end's doing rather than the transport's.
func (e *engine) ended(deadline time.Time) bool {
	return e.ctx.Err() != nil || pastDeadline(deadline)
}

// pastDeadline: deadline is set and has passed.
func pastDeadline(deadline time.Time) bool { return !deadline.IsZero() && !time.Now().Before(deadline) }

// contextError explains why a request with deadline failed with err, in words that belong in
// a record: the run's end or stop or the request's timeout, whichever came first, else err.
func (e *engine) contextError(deadline time.Time, err error) string {
	timedOut := pastDeadline(deadline)
	if e.ctx.Err() != nil && (!timedOut || e.endedAt.Load() < deadline.UnixNano()) {
		if errors.Is(context.Cause(e.ctx), errRunEnded) {
			return fmt.Sprintf("cancelled: the run ended (duration %s + grace period %s) while the request was in flight",
				e.cfg.Duration, e.cfg.GracePeriod)
		}
		return "cancelled: the run was stopped while the request was in flight"
	}
	if timedOut {
		return requestTimeoutError{e.cfg.RequestTimeout}.Error()
	}
	return "transport: " + err.Error()
}

// body builds request i's JSON body. For a delta-context request it puts the earlier turns
// (nil for a session's first turn) in front and also returns the turn's own part, which the
// session adds to its history once the turn is sent.
func (e *engine) body(r *Request, i int, earlier *history) (body, own []byte, err error) {
	if plain, ok := e.plainBody(r, i); ok {
		return plain, nil, nil
	}
	return e.mappedBody(r, i, earlier)
}

// mappedBody is body through encoding/json, for every request shape.
func (e *engine) mappedBody(r *Request, i int, earlier *history) (body, own []byte, err error) {
	deltas := r.ContextMode == ContextDeltas
	payload, err := decodeObject(r.Payload)
	if err != nil {
		return nil, nil, fmt.Errorf("payload: %w", err)
	}
	extra, err := decodeObject(r.Extra)
	if err != nil {
		return nil, nil, fmt.Errorf("extra: %w", err)
	}
	fields := make(map[string]any, len(payload)+len(extra)+10)
	for k, v := range payload {
		fields[k] = v
	}
	fields["model"] = e.cfg.Model
	if payload == nil {
		var prompt string
		if r.Prompt != nil {
			prompt = *r.Prompt
		} else if len(r.Messages) == 0 {
			prompt = e.synth.prompt(tailStream(i, r.TailKey), r.InputTokens, r.HashIDs, r.BlockSize)
		}
		if e.cfg.API == APIChat {
			switch {
			case deltas:
				if len(r.Messages) > 0 {
					own = arrayElements(r.Messages)
				} else if own, err = json.Marshal(promptMessages(prompt, r)); err != nil {
					return nil, nil, err
				} else {
					own = own[1 : len(own)-1] // the turn's messages as array elements
				}
				fields["messages"] = json.RawMessage(earlier.messages(own))
			case len(r.Messages) > 0:
				fields["messages"] = r.Messages
			default:
				fields["messages"] = promptMessages(prompt, r)
			}
			if len(r.Tools) > 0 {
				fields["tools"] = r.Tools
			}
		} else if deltas {
			own = []byte(prompt)
			fields["prompt"] = earlier.prompt(own)
		} else {
			fields["prompt"] = prompt
		}
		if r.OutputTokens > 0 {
			fields["max_tokens"] = r.OutputTokens
			if e.cfg.API == APIChat {
				fields["max_completion_tokens"] = r.OutputTokens
			}
			if e.cfg.IgnoreEOS {
				fields["ignore_eos"] = true
				fields["min_tokens"] = r.OutputTokens
			}
		}
	}
	fields["stream"] = e.cfg.Stream
	if e.cfg.Stream {
		fields["stream_options"] = map[string]bool{"include_usage": true}
	} else {
		delete(fields, "stream_options")
	}
	for k, v := range e.extraBody {
		fields[k] = v
	}
	for k, v := range extra {
		fields[k] = v
	}
	body, err = json.Marshal(fields)
	return body, own, err
}

// history is what a delta-context session has sent so far, kept by its goroutine only while
// a later turn remains, so a session costs its own accumulated prompt and no more: on the chat
// API the earlier turns' messages as JSON array elements joined by commas, on completions
// their prompts concatenated; a KeepReplies session also keeps each turn's reply after it.
type history struct {
	parts      []byte
	tokens     int // the earlier turns' input tokens (and kept replies' output tokens)
	replyBytes int // reply text kept so far (KeepReplies), bounded by Config.MaxReplyBytes
}

// messages is the chat messages array of a turn whose own messages are own.
func (h *history) messages(own []byte) []byte {
	var parts []byte
	if h != nil {
		parts = h.parts
	}
	out := make([]byte, 0, len(parts)+len(own)+3)
	out = append(out, '[')
	out = append(out, parts...)
	if len(parts) > 0 && len(own) > 0 {
		out = append(out, ',')
	}
	out = append(out, own...)
	return append(out, ']')
}

// prompt is the completions prompt of a turn whose own prompt is own.
func (h *history) prompt(own []byte) string {
	if h == nil {
		return string(own)
	}
	return string(h.parts) + string(own)
}

// add appends a sent turn's own part and input tokens.
func (h *history) add(own []byte, tokens int, api API) {
	if api == APIChat && len(h.parts) > 0 && len(own) > 0 {
		h.parts = append(h.parts, ',')
	}
	h.parts = append(h.parts, own...)
	h.tokens += tokens
}

// addReply appends the assistant's reply to the turn added last (a KeepReplies session): an
// assistant message on the chat API, the text itself on completions (a completion continues
// its prompt). tokens are the reply's output tokens, which the next turn sends as input.
func (h *history) addReply(reply []byte, tokens int, api API) {
	own := reply
	if api == APIChat {
		own, _ = json.Marshal(chatMessage{Role: "assistant", Content: string(reply)}) // two strings always marshal
	}
	h.add(own, tokens, api)
	h.replyBytes += len(reply)
}

// clipReply cuts reply to what the session may still keep of its replies (limit in all), at a
// UTF-8 boundary; truncated says it was cut.
func (h *history) clipReply(reply []byte, limit int) (kept []byte, truncated bool) {
	room := limit - h.replyBytes
	if len(reply) <= room {
		return reply, false
	}
	return utf8Prefix(reply, max(room, 0)), true
}

// utf8Prefix is the longest prefix of b of at most n bytes that does not split a character.
func utf8Prefix(b []byte, n int) []byte {
	if n >= len(b) {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// arrayElements is the inside of a JSON array (validated when the plan was made): its
// elements joined by commas, without the brackets.
func arrayElements(raw json.RawMessage) []byte {
	inner := bytes.TrimSpace(raw)
	inner = bytes.TrimSpace(inner[1 : len(inner)-1])
	return inner
}

// promptMessages is a synthesised chat prompt as messages: one user message, or with
// r.SystemPromptTokens a system message of the prompt's first that many words and a user
// message of the rest (each without the synthesiser's leading space).
func promptMessages(prompt string, r *Request) []chatMessage {
	if r.SystemPromptTokens <= 0 || r.Prompt != nil {
		return []chatMessage{{Role: "user", Content: prompt}}
	}
	cut := wordsPrefixLen([]byte(prompt), r.SystemPromptTokens)
	return []chatMessage{{Role: "system", Content: strings.TrimPrefix(prompt[:cut], " ")},
		{Role: "user", Content: strings.TrimPrefix(prompt[cut:], " ")}}
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// usage is the OpenAI usage object.
type usage struct {
	PromptTokens        *int          `json:"prompt_tokens"`
	CompletionTokens    *int          `json:"completion_tokens"`
	PromptTokensDetails *tokenDetails `json:"prompt_tokens_details"`
}

// tokenDetails is usage.prompt_tokens_details: how much of the prompt the server's prefix
// cache already held (vLLM and the simulator report it).
type tokenDetails struct {
	CachedTokens *int `json:"cached_tokens"`
}

// cachedTokens is the prompt tokens the server found in its prefix cache, when it said.
func (u *usage) cachedTokens() *int {
	if u == nil || u.PromptTokensDetails == nil {
		return nil
	}
	return u.PromptTokensDetails.CachedTokens
}

// streamChunk holds the parts of a chat or completions stream chunk that timing needs.
type streamChunk struct {
	Object  string `json:"object"`
	Message string `json:"message"` // vLLM's {"object":"error","message":...}
	Choices []struct {
		Index json.RawMessage `json:"index"`
		Text  string          `json:"text"`
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// hasContent: the chunk carries generated output (text, reasoning or a tool call delta).
func (c *streamChunk) hasContent() bool {
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Text != "" || ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" ||
			ch.Delta.Reasoning != "" || (len(ch.Delta.ToolCalls) > 0 && string(ch.Delta.ToolCalls) != "null") {
			return true
		}
	}
	return false
}

func (c *streamChunk) finished() bool {
	for i := range c.Choices {
		if c.Choices[i].FinishReason != nil {
			return true
		}
	}
	return false
}

// outcome is what reading a response found out.
type outcome struct {
	status       int
	err          string
	firstToken   time.Time
	lastToken    time.Time
	chunks       int
	gaps         []float64 // ms between content chunks, when kept
	expectTokens int       // the requested output tokens: room for the gaps in one allocation
	usage        *usage
	completedAt  time.Time
	responseSeen bool
	// keepReply asks the readers for the reply text (Request.KeepReplies); they keep at most
	// Config.MaxReplyBytes of it in reply and set replyCut when there was more.
	keepReply bool
	reply     []byte
	replyCut  bool
}

// exchange sends one request and reads its response; deadline (zero: none) bounds the whole
// exchange, and the run's end cuts it short.
func (e *engine) exchange(deadline time.Time, r *Request, key string, body []byte, sent *time.Time) outcome {
	resp, err := e.post(deadline, r, key, body, sent)
	if err != nil {
		return outcome{err: err.Error(), completedAt: time.Now()}
	}
	defer resp.close()
	out := outcome{status: resp.status, responseSeen: true, keepReply: r.KeepReplies, expectTokens: r.OutputTokens}
	if resp.status < 200 || resp.status > 299 {
		msg, rerr := io.ReadAll(io.LimitReader(resp.body, 64<<10))
		out.completedAt = time.Now()
		out.err = fmt.Sprintf("HTTP %d: %s", resp.status, errorMessage(msg))
		if rerr != nil && e.ended(deadline) {
			out.err += " (" + e.contextError(deadline, rerr) + ")"
		}
		return out
	}
	if e.cfg.Stream && !strings.HasPrefix(resp.contentType, "application/json") {
		e.readStream(deadline, resp.body, &out)
	} else {
		e.readWhole(deadline, resp.body, &out)
	}
	return out
}

// readStream reads SSE chunks as they arrive, timing every content chunk.
func (e *engine) readStream(deadline time.Time, body io.ReadCloser, out *outcome) {
	sse := newSSEReader(body, int(e.maxResponse))
	defer sse.release()
	finished := false
	for {
		data, err := sse.next()
		now := time.Now()
		if err != nil {
			out.completedAt = now
			switch {
			case e.ended(deadline):
				out.err = e.contextError(deadline, err)
			case err == io.EOF:
				if !finished {
					out.err = "stream ended before [DONE] or a finish reason"
				}
			default:
				out.err = "transport: reading the stream: " + err.Error()
			}
			return
		}
		if string(data) == "[DONE]" {
			out.completedAt = now
			drain(body)
			return
		}
		var chunk chunkInfo
		if out.keepReply && !out.replyCut {
			chunk, out.reply, err = decodeChunkText(data, out.reply, true)
			out.keepReplyWithin(e.maxReply)
		} else {
			chunk, err = decodeChunk(data)
		}
		if err != nil {
			out.completedAt = now
			out.err = "bad stream chunk: " + err.Error()
			return
		}
		if chunk.isError {
			out.completedAt = now
			msg := errorMessage(data)
			if chunk.message != "" {
				msg = chunk.message
			}
			out.err = "stream error: " + msg
			return
		}
		if chunk.content {
			if out.chunks == 0 {
				out.firstToken = now
			} else if e.cfg.InterTokenTimes {
				if out.gaps == nil {
					out.gaps = make([]float64, 0, min(max(out.expectTokens-1, 8), 4096))
				}
				out.gaps = append(out.gaps, ms(now.Sub(out.lastToken)))
			}
			out.lastToken = now
			out.chunks++
		}
		if chunk.usage != nil {
			out.usage = chunk.usage
		}
		if chunk.finished {
			finished = true
		}
	}
}

// drain reads what follows [DONE] (the chunked encoding's last chunk) so the connection goes
// back to the pool: a body closed before its end closes the connection, and an open-loop replay
// would then dial once per request. A server that keeps the stream open after [DONE] gets
// 100 ms before the connection is given up (the lean client's body takes a read deadline;
// net/http's is closed from a timer).
func drain(body io.ReadCloser) {
	if d, ok := body.(interface{ SetReadDeadline(time.Time) error }); ok {
		if d.SetReadDeadline(time.Now().Add(100*time.Millisecond)) == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
			return
		}
	}
	giveUp := time.AfterFunc(100*time.Millisecond, func() { body.Close() })
	defer giveUp.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
}

// readWhole reads a non-streamed response.
func (e *engine) readWhole(deadline time.Time, body io.Reader, out *outcome) {
	raw, err := io.ReadAll(io.LimitReader(body, e.maxResponse+1))
	out.completedAt = time.Now()
	if err != nil {
		if e.ended(deadline) {
			out.err = e.contextError(deadline, err)
		} else {
			out.err = "transport: reading the response: " + err.Error()
		}
		return
	}
	if int64(len(raw)) > e.maxResponse {
		out.err = fmt.Sprintf("response larger than %d bytes", e.maxResponse)
		return
	}
	if out.keepReply {
		var resp struct {
			Usage   *usage `json:"usage"`
			Choices []struct {
				Index   json.RawMessage `json:"index"`
				Text    *string         `json:"text"`
				Message *struct {
					Content *string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			out.err = "bad response body: " + err.Error()
			return
		}
		out.usage = resp.Usage
		for _, c := range resp.Choices {
			if !firstChoice(c.Index) {
				continue
			}
			if c.Text != nil {
				out.reply = append(out.reply, *c.Text...)
			}
			if c.Message != nil && c.Message.Content != nil {
				out.reply = append(out.reply, *c.Message.Content...)
			}
		}
		out.keepReplyWithin(e.maxReply)
		return
	}
	var resp struct {
		Usage *usage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		out.err = "bad response body: " + err.Error()
		return
	}
	out.usage = resp.Usage
}

// keepReplyWithin cuts the reply read so far to limit bytes (a UTF-8 boundary) and stops
// keeping more once it was cut.
func (o *outcome) keepReplyWithin(limit int) {
	if len(o.reply) > limit {
		o.reply, o.replyCut = utf8Prefix(o.reply, limit), true
	}
}

// errorMessage pulls the message out of an OpenAI or problem+json error body, else returns the
// body's start.
func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
		Detail  string `json:"detail"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		switch {
		case e.Error != nil && e.Error.Message != "":
			return e.Error.Message
		case e.Message != "":
			return e.Message
		case e.Detail != "":
			return e.Detail
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
