package inferencesim

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inference-sim/latency"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

func TestModuleCalculatorNames(t *testing.T) {
	for name, want := range map[string]bool{"constant": false, "per-token": false, "": false,
		"wasm:per-token": true, "/opt/calc/mine.wasm": true, "calc.wasm": true} {
		if got := IsModuleCalculator(name); got != want {
			t.Errorf("%q: %v", name, got)
		}
	}
}

// TestWASMCalculatorsMatchTheNativeOnes: the built-in calculators run as WASM modules give the
// schedules the simulator computes natively (deterministic settings: no jitter).
func TestWASMCalculatorsMatchTheNativeOnes(t *testing.T) {
	w := &WASMCalculators{Dirs: ModuleDirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)}}
	defer w.Close(context.Background())
	p := latency.Params{TimeToFirstToken: 10 * time.Millisecond, InterTokenLatency: 500 * time.Microsecond,
		PrefillOverhead: 3 * time.Millisecond, PrefillTimePerToken: 20 * time.Microsecond,
		KVCacheTransferLatency: 2 * time.Millisecond, TimeFactorUnderLoad: 2}
	for _, name := range []string{"constant", "per-token"} {
		native, err := latency.New(name, p)
		if err != nil {
			t.Fatal(err)
		}
		module, err := w.Resolve("wasm:"+name, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []latency.Input{
			{PromptTokens: 100, OutputTokens: 5, RunningRequests: 1, MaxNumSeqs: 8, Rand: 1},
			{PromptTokens: 4000, CachedPromptTokens: 1024, OutputTokens: 32, RunningRequests: 8, MaxNumSeqs: 8, Rand: 2},
			{PromptTokens: 700, OutputTokens: 3, RunningRequests: 3, MaxNumSeqs: 8, RemotePrefill: true, Rand: 3},
		} {
			nt, ng, err := native.Schedule(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			mt, mg, err := module.Schedule(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if nt != mt || len(ng) != len(mg) || (len(ng) > 0 && ng[len(ng)-1] != mg[len(mg)-1]) {
				t.Errorf("%s %+v: native ttft %v gaps %v, module ttft %v gaps %v", name, in, nt, ng, mt, mg)
			}
		}
	}
}

// TestSimulatorServesWithAModuleCalculator: --latency-calculator wasm:constant drives the
// response timing through the module.
func TestSimulatorServesWithAModuleCalculator(t *testing.T) {
	w := &WASMCalculators{Dirs: ModuleDirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)}}
	defer w.Close(context.Background())
	cfg, err := ParseConfig([]string{"--model", "fake-model", "--seed", "1", "--latency-calculator", "wasm:constant",
		"--time-to-first-token", "30ms", "--inter-token-latency", "2ms"}, Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(cfg, WithCalculatorResolver(w.Resolve), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.ServeListeners(ctx, []net.Listener{ln}) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	code, _, body := post(t, "http://"+ln.Addr().String()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":11,"ignore_eos":true}`)
	// 30 ms + 10 x 2 ms = 50 ms, never less.
	if elapsed := time.Since(start); code != 200 || elapsed < 50*time.Millisecond {
		t.Fatalf("%d after %v: %s", code, elapsed, body)
	}
	if _, err := (&WASMCalculators{Dirs: ModuleDirs{Builtin: filepath.Join(t.TempDir(), "none")}}).Resolve("wasm:constant", latency.Params{}); err == nil {
		t.Fatal("a missing module directory must be an error")
	}
}
