package pertoken_test

import (
	"slices"
	"testing"
	"time"

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
		want []time.Duration
	}{
		{"uncached prompt", latency.Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 1, MaxNumSeqs: 3}, []time.Duration{15e6, 1e6}},
		{"half cached", latency.Input{PromptTokens: 1000, CachedPromptTokens: 500, OutputTokens: 1, RunningRequests: 1, MaxNumSeqs: 3}, []time.Duration{10e6}},
		{"cache larger than prompt", latency.Input{PromptTokens: 10, CachedPromptTokens: 50, OutputTokens: 1}, []time.Duration{5e6}},
		{"loaded", latency.Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 2, MaxNumSeqs: 3}, []time.Duration{30e6, 2e6}},
		{"remote prefill counts every prompt token, unloaded", latency.Input{PromptTokens: 1000, CachedPromptTokens: 900, OutputTokens: 1, RunningRequests: 3, MaxNumSeqs: 3, RemotePrefill: true}, []time.Duration{2e6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := m.Timeline(c.in, nil)
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("got %v (%v), want %v", got, err, c.want)
			}
		})
	}
}
