package inferencerouter

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// cannedUpstream answers every upstream call in memory, read whole the way
// hostUpstream hands over a small answer of known length, so the benchmark
// measures the router's own work per request (prompt peek, pick, header
// copies, the relay and writing the response) without the loopback hop.
type cannedUpstream struct{}

const cannedAnswer = `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`

func (cannedUpstream) exchange(req *fasthttp.Request, resp *fasthttp.Response, _ time.Duration) (func(bool), error) {
	resp.SetStatusCode(200)
	resp.Header.SetContentType("application/json")
	resp.SetBodyString(cannedAnswer)
	return nil, nil
}

// cannedRouter is a router of profile over n replicas answered by
// cannedUpstream, and a request context to drive its handler in memory.
func cannedRouter(tb testing.TB, profile string, n int) (*Router, *fasthttp.RequestCtx) {
	tb.Helper()
	var replicas []string
	for i := range n {
		replicas = append(replicas, "http://127.0.0.1:"+strconv.Itoa(i+1))
	}
	cfg, err := ParseConfig([]string{"--replicas", strings.Join(replicas, ","), "--profile", profile, "--seed", "1"},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		tb.Fatal(err)
	}
	rt := New(cfg)
	for _, r := range rt.main.replicas {
		r.client = cannedUpstream{}
	}
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(new(fasthttp.Request), nil, nil)
	return rt, ctx
}

// BenchmarkServeHTTP is the router's CPU cost per chat request by profile
// (4 replicas, a 2 KiB prompt; prefix profiles see 64 recurring prefixes):
// the request as the server has parsed it, through the handler, to the
// response written out as the server writes it.
func BenchmarkServeHTTP(b *testing.B) {
	var bodies [][]byte
	for g := range 64 {
		system := strings.Repeat("system prompt "+strconv.Itoa(g)+" ", 100)
		bodies = append(bodies, []byte(`{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"`+system+`"},{"role":"user","content":"hello"}]}`))
	}
	for _, profile := range []string{"random", "load", "prefix-affinity", "optimized"} {
		b.Run(profile, func(b *testing.B) {
			rt, ctx := cannedRouter(b, profile, 4)
			out := bufio.NewWriter(io.Discard)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Request.Header.SetMethod("POST")
				ctx.Request.SetRequestURI("/v1/chat/completions")
				ctx.Request.Header.SetContentType("application/json")
				ctx.Request.Header.Set("Authorization", "Bearer token")
				ctx.Request.SetBodyRaw(bodies[i%len(bodies)])
				ctx.Response.Reset()
				rt.handle(ctx)
				if ctx.Response.StatusCode() != 200 {
					b.Fatal(ctx.Response.StatusCode())
				}
				if err := ctx.Response.Write(out); err != nil || out.Flush() != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
