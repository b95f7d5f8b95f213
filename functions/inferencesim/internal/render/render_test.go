package render

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

// request generates and schedules body (admitted at 0, 1 ms between tokens).
func request(t *testing.T, kind engine.Kind, body string) *engine.Request {
	t.Helper()
	cfg, err := config.Parse([]string{"--model", "m", "--seed", "3", "--inter-token-latency", "1ms"}, config.Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := engine.NewGenerator(cfg, nil, nil, engine.NewLoRARegistry(nil))
	r := &engine.Request{}
	r.Begin(kind, cfg.Seed, 1)
	if e := r.Wire.Decode([]byte(body), kind == engine.Chat); e != nil {
		t.Fatal(e)
	}
	r.Model, r.Created = "m", 1700000000
	r.ID = append(r.ID, "chatcmpl-1"...)
	calc, err := latency.New(cfg.LatencyCalculator, cfg.Latency)
	if err != nil {
		t.Fatal(err)
	}
	if e := g.Check(r); e != nil {
		t.Fatal(e)
	}
	g.Generate(r)
	if e := g.Schedule(r, calc); e != nil {
		t.Fatal(e)
	}
	return r
}

type discard struct{ n int }

func (d *discard) Observe(float64) { d.n++ }

// drain emits every event of r through s, reading with a p-byte buffer, and returns the
// chunks Copy handed out.
func drain(t *testing.T, s *Stream, r *engine.Request, p int) []string {
	t.Helper()
	var chunks []string
	buf := make([]byte, p)
	for i := 0; i < 10000; i++ {
		if !s.Pending() {
			if s.Done() {
				return chunks
			}
			next, ok := r.NextDeadline()
			if !ok {
				s.Finish(r)
			} else {
				s.Emit(r, next, &discard{})
			}
		}
		n := s.Copy(buf)
		chunks = append(chunks, string(buf[:n]))
	}
	t.Fatal("the stream never ended")
	return nil
}

// TestFullChatBody: the non-streamed body is JSON with the id, model, the usage of every
// sequence and each choice's whole text.
func TestFullChatBody(t *testing.T) {
	r := request(t, engine.Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"n":2,"ignore_eos":true,"logprobs":true,"top_logprobs":2}`)
	var got struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Usage   struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Choices []struct {
			Index        int    `json:"index"`
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content string `json:"content"`
			} `json:"message"`
			Logprobs struct {
				Content []struct {
					TopLogprobs []json.RawMessage `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	b := Full(nil, r)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if got.ID != "chatcmpl-1" || got.Object != "chat.completion" || got.Created != 1700000000 || got.Usage.CompletionTokens != 10 || len(got.Choices) != 2 {
		t.Fatalf("%s", b)
	}
	for i, c := range got.Choices {
		if c.Index != i || c.FinishReason != "length" || c.Message.Content != strings.Join(r.Seqs[i].Tokens, "") ||
			len(c.Logprobs.Content) != 5 || len(c.Logprobs.Content[0].TopLogprobs) != 2 {
			t.Fatalf("choice %d: %+v", i, c)
		}
	}
}

// TestStreamFramesInOrder: a streamed chat answer is the role chunk, one chunk per token,
// the finish chunk, the usage chunk (include_usage) and [DONE]; Copy never splits a frame
// that fits, and every inter-token gap is observed.
func TestStreamFramesInOrder(t *testing.T) {
	r := request(t, engine.Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	var s Stream
	s.Reset(Completions, 1<<16)
	chunks := drain(t, &s, r, 300)
	var frames []string
	for _, c := range chunks {
		if !strings.HasSuffix(c, "\n\n") {
			t.Fatalf("a chunk ends inside a frame: %q", c)
		}
		frames = append(frames, strings.Split(strings.TrimSuffix(c, "\n\n"), "\n\n")...)
	}
	if len(frames) != 1+4+1+1+1 {
		t.Fatalf("%d frames: %q", len(frames), frames)
	}
	if !strings.Contains(frames[0], `"delta":{"role":"assistant"}`) || !strings.Contains(frames[5], `"finish_reason":"length"`) ||
		!strings.Contains(frames[6], `"completion_tokens":4`) || frames[7] != "data: [DONE]" {
		t.Fatalf("frames %q", frames)
	}
	for i, tok := range r.Seqs[0].Tokens {
		want, _ := json.Marshal(tok)
		if !strings.Contains(frames[1+i], `"content":`+string(want)) {
			t.Fatalf("frame %d %q does not carry token %q", 1+i, frames[1+i], tok)
		}
	}
	itl := &discard{}
	r2 := request(t, engine.Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true,"stream":true}`)
	var s2 Stream
	for {
		next, ok := r2.NextDeadline()
		if !ok {
			break
		}
		s2.Emit(r2, next+time.Microsecond, itl)
	}
	if itl.n != 3 || !s2.Done() {
		t.Fatalf("%d gaps observed for 4 tokens, done %v", itl.n, s2.Done())
	}
}

// TestResponsesEventsAreNumbered: the Responses stream opens with response.created and ends
// with response.completed, its sequence_number counting up from 0, and no [DONE].
func TestResponsesEventsAreNumbered(t *testing.T) {
	r := request(t, engine.Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"ignore_eos":true,"stream":true}`)
	r.ID = append(r.ID[:0], "resp_abc"...)
	var s Stream
	s.Reset(Responses, 1<<16)
	body := strings.Join(drain(t, &s, r, 1<<16), "")
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if !strings.HasPrefix(events[0], "event: response.created\n") || !strings.HasPrefix(events[len(events)-1], "event: response.completed\n") || strings.Contains(body, "[DONE]") {
		t.Fatalf("events %q", events)
	}
	for i, ev := range events {
		data := ev[strings.Index(ev, "data: ")+len("data: "):]
		var e struct {
			Seq int `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil || e.Seq != i {
			t.Fatalf("event %d: sequence %d (%v): %s", i, e.Seq, err, data)
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(ResponseObject(nil, r, true), &obj); err != nil || obj["status"] != "completed" {
		t.Fatalf("%v %v", err, obj)
	}
}

// TestListsAreJSON: the embeddings, tokenize and models answers parse, with their counts.
func TestListsAreJSON(t *testing.T) {
	for _, b64 := range []bool{false, true} {
		e := NewEmbeddings(2, 3, "m", b64)
		e.Add([]float32{1, 0, 0})
		e.Add([]float32{0, 1, 0})
		var got struct {
			Data []struct {
				Index     int             `json:"index"`
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
			Usage struct {
				Total int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(e.Body("m", 7), &got); err != nil || len(got.Data) != 2 || got.Data[1].Index != 1 || got.Usage.Total != 7 {
			t.Fatalf("base64 %v: %v %+v", b64, err, got)
		}
	}
	var tok struct {
		Count  int      `json:"count"`
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.Unmarshal(Tokenize(nil, 10, []uint32{4, 5}), &tok); err != nil || tok.Count != 2 || tok.Tokens[1] != 5 {
		t.Fatalf("%v %+v", err, tok)
	}
	var models struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.Unmarshal(Models(nil, 1, []Model{{ID: "m", Root: "m"}, {ID: "lora", Root: "/p", Parent: "m"}}), &models); err != nil ||
		len(models.Data) != 2 || models.Data[0].Parent != nil || *models.Data[1].Parent != "m" {
		t.Fatalf("%v %+v", err, models)
	}
}

// TestReusedStreamRendersItsOwnHead: a stream renders each token chunk's head (id, model,
// object, created) once per request; after Reset the next request's chunks carry its own id
// and model, byte for byte what the first chunk of a fresh stream carries.
func TestReusedStreamRendersItsOwnHead(t *testing.T) {
	body := `{"model":"m","prompt":"hi","max_tokens":3,"ignore_eos":true,"stream":true}`
	r1 := request(t, engine.Text, body)
	var s Stream
	s.Reset(Completions, 1<<16)
	first := strings.Join(drain(t, &s, r1, 4096), "")
	if n := strings.Count(first, `"id":"chatcmpl-1","model":"m","object":"text_completion"`); n != 4 { // 3 tokens and the finish chunk
		t.Fatalf("%d chunks with the first request's head: %q", n, first)
	}
	r2 := request(t, engine.Text, body)
	r2.ID, r2.Model, r2.Created = append(r2.ID[:0], "cmpl-2"...), "other", 1700000001
	s.Reset(Completions, 1<<16)
	second := strings.Join(drain(t, &s, r2, 4096), "")
	var fresh Stream
	fresh.Reset(Completions, 1<<16)
	r3 := request(t, engine.Text, body)
	r3.ID, r3.Model, r3.Created = append(r3.ID[:0], "cmpl-2"...), "other", 1700000001
	if want := strings.Join(drain(t, &fresh, r3, 4096), ""); second != want {
		t.Fatalf("the reused stream rendered\n%q\na fresh one\n%q", second, want)
	}
	if strings.Contains(second, "chatcmpl-1") || strings.Count(second, `"id":"cmpl-2","model":"other","object":"text_completion","created":1700000001`) != 4 {
		t.Fatalf("the reused stream kept the first request's head: %q", second)
	}
}
