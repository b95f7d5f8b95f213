package pertoken_test

import (
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/latency/pertoken"
)

func TestPerToken(t *testing.T) {
	m, err := pertoken.New([]byte(`{"prefill-overhead":"5ms","prefill-time-per-token":"10us","inter-token-latency":"1ms",
		"kv-cache-transfer-time-per-token":"2us","time-factor-under-load":3,"time-to-first-token":"99ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   latency.Input
		want []int64
	}{
		{"uncached prompt", latency.Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 1, MaxNumSeqs: 3}, []int64{15e6, 1e6}},
		{"half cached", latency.Input{PromptTokens: 1000, CachedPromptTokens: 500, OutputTokens: 1, RunningRequests: 1, MaxNumSeqs: 3}, []int64{10e6}},
		{"cache larger than prompt", latency.Input{PromptTokens: 10, CachedPromptTokens: 50, OutputTokens: 1}, []int64{5e6}},
		{"loaded", latency.Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 2, MaxNumSeqs: 3}, []int64{30e6, 2e6}},
		{"remote prefill counts every prompt token, unloaded", latency.Input{PromptTokens: 1000, CachedPromptTokens: 900, OutputTokens: 1, RunningRequests: 3, MaxNumSeqs: 3, RemotePrefill: true}, []int64{2e6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := m.Schedule(c.in, nil)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}
