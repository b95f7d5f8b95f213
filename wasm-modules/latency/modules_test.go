package latency

import (
	"slices"
	"testing"
	"time"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

func TestConstantModule(t *testing.T) {
	m, err := Constant.New([]byte(`{"time-to-first-token":"10ms","inter-token-latency":"2ms","kv-cache-transfer-latency":"3ms","time-factor-under-load":2,"prefill-time-per-token":"1ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.Timeline(Input{PromptTokens: 1000, OutputTokens: 3, RunningRequests: 1, MaxNumSeqs: 2}, nil)
	if want := []time.Duration{10e6, 2e6, 2e6}; !slices.Equal(got, want) {
		t.Fatalf("local prefill %v, want %v (prompt size must not matter)", got, want)
	}
	got, _ = m.Timeline(Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 2, MaxNumSeqs: 2, RemotePrefill: true}, nil)
	if want := []time.Duration{3e6, 4e6}; !slices.Equal(got, want) {
		t.Fatalf("remote prefill under full load %v, want %v (KV transfer is not load-scaled)", got, want)
	}
	if _, err := Constant.New([]byte(`{"time-to-first-token":"10ms","time-to-first-token-std-dev":"5ms"}`)); err == nil {
		t.Fatal("std-dev above 30% accepted")
	}
}

func TestPerTokenModule(t *testing.T) {
	m, err := PerToken.New([]byte(`{"prefill-overhead":"5ms","prefill-time-per-token":"10us","inter-token-latency":"1ms",
		"kv-cache-transfer-time-per-token":"2us","time-factor-under-load":3,"time-to-first-token":"99ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   Input
		want []time.Duration
	}{
		{"uncached prompt", Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 1, MaxNumSeqs: 3}, []time.Duration{15e6, 1e6}},
		{"half cached", Input{PromptTokens: 1000, CachedPromptTokens: 500, OutputTokens: 1, RunningRequests: 1, MaxNumSeqs: 3}, []time.Duration{10e6}},
		{"cache larger than prompt", Input{PromptTokens: 10, CachedPromptTokens: 50, OutputTokens: 1}, []time.Duration{5e6}},
		{"loaded", Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 2, MaxNumSeqs: 3}, []time.Duration{30e6, 2e6}},
		{"remote prefill counts every prompt token, unloaded", Input{PromptTokens: 1000, CachedPromptTokens: 900, OutputTokens: 1, RunningRequests: 3, MaxNumSeqs: 3, RemotePrefill: true}, []time.Duration{2e6}},
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

func TestModuleDescriptors(t *testing.T) {
	for _, m := range []Module{Constant, PerToken} {
		d := m.Descriptor()
		if d.Kind != abi.KindLatencyCalculator || d.ABIVersion != abi.Version || d.Name != m.Name || d.Description == "" {
			t.Errorf("%s: descriptor %+v", m.Name, d)
		}
	}
}
