package inferencesim

import (
	"testing"

	"github.com/valyala/fasthttp"
)

func BenchmarkChatNonStream(b *testing.B) {
	r := newTestRank(b)
	var ctx fasthttp.RequestCtx
	body := `{"model":"fake-model","messages":[{"role":"user","content":"Hello, can you tell me something about the weather today?"}],"max_tokens":16}`
	b.ReportAllocs()
	for b.Loop() {
		serve(r, &ctx, "/v1/chat/completions", body)
	}
}

func BenchmarkChatStream(b *testing.B) {
	r := newTestRank(b)
	var ctx fasthttp.RequestCtx
	body := `{"model":"fake-model","messages":[{"role":"user","content":"Hello, can you tell me something about the weather today?"}],"max_tokens":16,"stream":true}`
	b.ReportAllocs()
	for b.Loop() {
		serve(r, &ctx, "/v1/chat/completions", body)
	}
}
