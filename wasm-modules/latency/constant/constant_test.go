package constant_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/latency/constant"
)

func TestConstant(t *testing.T) {
	m, err := constant.New([]byte(`{"time-to-first-token":"10ms","inter-token-latency":"2ms","kv-cache-transfer-latency":"3ms","time-factor-under-load":2,"prefill-time-per-token":"1ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.Timeline(latency.Input{PromptTokens: 1000, OutputTokens: 3, RunningRequests: 1, MaxNumSeqs: 2}, nil)
	if want := []time.Duration{10e6, 2e6, 2e6}; !slices.Equal(got, want) {
		t.Fatalf("local prefill %v, want %v (prompt size must not matter)", got, want)
	}
	got, _ = m.Timeline(latency.Input{PromptTokens: 1000, OutputTokens: 2, RunningRequests: 2, MaxNumSeqs: 2, RemotePrefill: true}, nil)
	if want := []time.Duration{3e6, 4e6}; !slices.Equal(got, want) {
		t.Fatalf("remote prefill under full load %v, want %v (KV transfer is not load-scaled)", got, want)
	}
	if _, err := constant.New([]byte(`{"time-to-first-token":"10ms","time-to-first-token-std-dev":"5ms"}`)); err == nil {
		t.Fatal("std-dev above 30% accepted")
	}
}
