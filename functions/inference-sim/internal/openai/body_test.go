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
