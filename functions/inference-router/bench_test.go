package inferencerouter

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// cannedTransport answers every upstream call in memory, so the benchmark
// measures the router's own work per request (body read, prompt peek,
// pick, header copies, relay) without the loopback hop.
type cannedTransport struct{}

func (cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)), Request: r}, nil
}

// BenchmarkServeHTTP is the router's CPU cost per chat request by profile
// (4 replicas, a 2 KiB prompt; prefix profiles see 64 recurring prefixes).
func BenchmarkServeHTTP(b *testing.B) {
	var bodies []string
	for g := range 64 {
		system := strings.Repeat("system prompt "+strconv.Itoa(g)+" ", 100)
		bodies = append(bodies, `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"`+system+`"},{"role":"user","content":"hello"}]}`)
	}
	for _, profile := range []string{"random", "load", "prefix-affinity", "optimized"} {
		b.Run(profile, func(b *testing.B) {
			cfg, err := ParseConfig([]string{"--replicas", "http://127.0.0.1:1,http://127.0.0.1:2,http://127.0.0.1:3,http://127.0.0.1:4",
				"--profile", profile, "--seed", "1"}, func(string) string { return "" }, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			rt := New(cfg)
			rt.client.Transport = cannedTransport{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(bodies[i%len(bodies)]))
				rt.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
				i++
			}
		})
	}
}
