package openai

import (
	"encoding/json"
	"testing"
)

// FuzzFastDecode: whenever the allocation-free decoder accepts a body,
// it must decode exactly what encoding/json decodes.
func FuzzFastDecode(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"Hello"}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","prompt":"hi","n":2,"ignore_eos":true,"temperature":0.7}`,
		`{"model":"m","messages":[],"max_completion_tokens":3}`,
		`{"model":"m","prompt":"hi","ignore_eos":true,"max_tokens":8,"min_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`,
		` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "a" , "name" : "x" } ] } `,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		g := &Body{}
		if !g.fastDecode([]byte(body), chat) {
			return
		}
		want := &Body{}
		var err error
		if chat {
			err = json.Unmarshal([]byte(body), &want.Chat)
		} else {
			err = json.Unmarshal([]byte(body), &want.Text)
		}
		if err != nil {
			t.Fatalf("fast path accepted %q that encoding/json rejects: %v", body, err)
		}
		for _, x := range []*Body{g, want} { // nil and empty message lists mean the same
			if len(x.Chat.Messages) == 0 {
				x.Chat.Messages = nil
			}
		}
		got, _ := json.Marshal([]any{g.Chat, g.Text.CommonRequest, string(g.Text.Prompt)})
		exp, _ := json.Marshal([]any{want.Chat, want.Text.CommonRequest, string(want.Text.Prompt)})
		if string(got) != string(exp) {
			t.Fatalf("%q:\nfast %s\njson %s", body, got, exp)
		}
	})
}

// TestBodyDecode: the fast path and encoding/json read the same request; a body neither can
// read is the OpenAI 400; Reset empties the request and drops a huge body copy.
func TestBodyDecode(t *testing.T) {
	var b Body
	if e := b.Decode([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`), true); e != nil {
		t.Fatal(e)
	}
	if b.Chat.Model != "m" || len(b.Chat.Messages) != 1 || *b.Chat.MaxTokens != 4 || len(b.fast.copy) == 0 {
		t.Fatalf("fast path: %+v", b.Chat)
	}
	b.Reset(1 << 10)
	if e := b.Decode([]byte(`{"model":"m","messages":[{"role":"user","content":"h\u0069"}],"logprobs":true}`), true); e != nil {
		t.Fatal(e)
	}
	if b.Chat.Messages[0].Content.Text != "hi" || !b.Chat.Logprobs || b.Chat.MaxTokens != nil {
		t.Fatalf("general path: %+v", b.Chat)
	}
	if e := b.Decode([]byte(`{"model":`), false); e == nil || e.Status != 400 || e.Message[:len("Failed to read")] != "Failed to read" {
		t.Fatalf("bad body: %+v", e)
	}
	// The benchmark runner's own shape (ignore_eos with min_tokens) stays on the fast path.
	b.Reset(1 << 10)
	if !b.fastDecode([]byte(`{"model":"m","prompt":"hi","ignore_eos":true,"max_tokens":8,"min_tokens":8,"stream":true}`), false) || *b.Text.MaxTokens != 8 {
		t.Fatalf("min_tokens left the fast path: %+v", b.Text)
	}
	b.fast.copy = make([]byte, 0, 1<<20)
	b.Reset(1 << 10)
	if b.Chat.Model != "" || cap(b.fast.copy) != 0 {
		t.Fatal("Reset kept the request or a huge body copy")
	}
}

// TestDecodeResponses: instructions become the system message and the input the user turns;
// tools are refused.
func TestDecodeResponses(t *testing.T) {
	var b Body
	if e := b.DecodeResponses([]byte(`{"model":"m","instructions":"be brief","input":"hello","max_output_tokens":3,"stream":true}`)); e != nil {
		t.Fatal(e)
	}
	c := &b.Chat
	if c.Model != "m" || !c.Stream || *c.MaxTokens != 3 || len(c.Messages) != 2 || c.Messages[0].Role != "system" || c.Messages[1].Content.Text != "hello" {
		t.Fatalf("%+v", c)
	}
	var items Body
	if e := items.DecodeResponses([]byte(`{"model":"m","input":[{"role":"user","content":"a"},{"content":[{"type":"text","text":"b"}]}]}`)); e != nil ||
		len(items.Chat.Messages) != 2 || items.Chat.Messages[1].Role != "user" || items.Chat.Messages[1].Content.Text != "b" {
		t.Fatalf("%v %+v", e, items.Chat.Messages)
	}
	var tools Body
	if e := tools.DecodeResponses([]byte(`{"model":"m","input":"x","tools":[{"type":"function"}]}`)); e == nil || e.Status != 400 {
		t.Fatalf("tools accepted: %v", e)
	}
}
