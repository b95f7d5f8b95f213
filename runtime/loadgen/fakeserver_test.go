package loadgen_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeOpenAI is a tiny OpenAI-compatible server for the tests: chat and completions, SSE with
// a controllable time to first token and inter-token latency, error statuses, and streams
// that break or never finish.
type fakeOpenAI struct {
	TTFT, ITL time.Duration
	// Tokens is how many tokens to stream; 0 uses the request's max_tokens, else 4.
	Tokens int
	// Status, when not 0 or 200, answers every request with it and an OpenAI error body.
	Status  int
	NoUsage bool
	// AbortAfter breaks the connection after that many tokens (0: never).
	AbortAfter int
	// NoDone ends the stream without a finish reason or [DONE].
	NoDone bool
	// EchoID makes every token name its request (replyText), so each reply is distinct text
	// with a JSON escape and a two-byte character in it.
	EchoID bool
	// FailRequest answers the request whose X-Request-ID ends in "-<FailRequest>" with a 500.
	FailRequest int

	mu          sync.Mutex
	seen        []seenRequest
	connections atomic.Int64 // TCP connections accepted
}

type seenRequest struct {
	Path   string
	Header http.Header
	Body   map[string]any
	At     time.Time
}

func (f *fakeOpenAI) start(t *testing.T) *httptest.Server {
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			f.connections.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func (f *fakeOpenAI) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// bySessionTurn finds the body of the request with this X-Request-ID suffix.
func (f *fakeOpenAI) byRequestID(id string) (seenRequest, bool) {
	for _, r := range f.requests() {
		if r.Header.Get("X-Request-ID") == id {
			return r, true
		}
	}
	return seenRequest{}, false
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: at})
	f.mu.Unlock()
	status := f.Status
	if f.FailRequest > 0 && strings.HasSuffix(r.Header.Get("X-Request-ID"), fmt.Sprintf("-%d", f.FailRequest)) {
		status = http.StatusInternalServerError
	}
	if status != 0 && status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"injected failure %d","type":"x","code":%d}}`, status, status)
		return
	}
	token := func(k int) string {
		if f.EchoID {
			return tokenText(r.Header.Get("X-Request-ID"), k)
		}
		return " tok"
	}
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	tokens := f.Tokens
	if tokens == 0 {
		tokens = 4
		if m, ok := body["max_tokens"].(float64); ok {
			tokens = int(m)
		}
	}
	promptTokens := 0
	if p, ok := body["prompt"].(string); ok {
		promptTokens = len(strings.Fields(p))
	}
	if msgs, ok := body["messages"].([]any); ok {
		for _, m := range msgs {
			if c, ok := m.(map[string]any)["content"].(string); ok {
				promptTokens += len(strings.Fields(c))
			}
		}
	}
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`,
		promptTokens, tokens, promptTokens+tokens, promptTokens/2)
	if stream, _ := body["stream"].(bool); !stream {
		if !sleepCtx(r, f.TTFT+time.Duration(max(tokens-1, 0))*f.ITL) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var text strings.Builder
		for k := range tokens {
			text.WriteString(token(k))
		}
		if chat {
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"length"}],"usage":%s}`, jsonString(text.String()), usage)
		} else {
			fmt.Fprintf(w, `{"id":"x","object":"text_completion","choices":[{"index":0,"text":%s,"finish_reason":"length"}],"usage":%s}`, jsonString(text.String()), usage)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	event := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		flusher.Flush()
	}
	if chat { // vLLM's first chunk: the role, no content (must not count as a token)
		event(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	}
	for k := 0; k < tokens; k++ {
		wait := f.ITL
		if k == 0 {
			wait = f.TTFT
		}
		if !sleepCtx(r, wait) {
			return
		}
		if f.AbortAfter > 0 && k == f.AbortAfter {
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
		if chat {
			event(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + jsonString(token(k)) + `},"finish_reason":null}]}`)
		} else {
			event(`{"id":"x","object":"text_completion","choices":[{"index":0,"text":` + jsonString(token(k)) + `,"finish_reason":null}]}`)
		}
	}
	if f.NoDone {
		return
	}
	if chat {
		event(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)
	} else {
		event(`{"id":"x","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}]}`)
	}
	if !f.NoUsage {
		event(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":` + usage + `}`)
	}
	event("[DONE]")
	// The end of the chunked body follows in a later write, as with servers that flush each
	// event: a client that stops reading at [DONE] loses the connection.
	sleepCtx(r, 2*time.Millisecond)
}

// tokenText is token k of the reply to the request with X-Request-ID id (fakeOpenAI.EchoID).
func tokenText(id string, k int) string { return fmt.Sprintf(` %s:%d"é`, id, k) }

// replyText is the whole reply of n tokens to the request with X-Request-ID id.
func replyText(id string, n int) string {
	var b strings.Builder
	for k := range n {
		b.WriteString(tokenText(id, k))
	}
	return b.String()
}

func jsonString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// sleepCtx waits d unless the client goes away first (so test servers close promptly).
func sleepCtx(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
