package inferencesim

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

func TestModuleCalculatorNames(t *testing.T) {
	for name, want := range map[string]bool{"constant": false, "per-token": false, "": false,
		"wasm:per-token": true, "/opt/calc/mine.wasm": true, "calc.wasm": true} {
		if got := config.IsModuleCalculator(name); got != want {
			t.Errorf("%q: %v", name, got)
		}
	}
}

// TestSimulatorServesWithAModuleCalculator: --latency-calculator wasm:constant drives the
// response timing through the module.
func TestSimulatorServesWithAModuleCalculator(t *testing.T) {
	w := &WASMCalculators{Dirs: ModuleDirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)}}
	defer w.Close(context.Background())
	ts := startSimWith(t, config.Environment{}, []Option{WithCalculatorResolver(w.Resolve)}, "--model", "fake-model", "--seed", "1",
		"--latency-calculator", "wasm:constant", "--time-to-first-token", "30ms", "--inter-token-latency", "2ms")
	start := time.Now()
	code, _, body := post(t, ts.url()+"/v1/chat/completions",
		`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"max_tokens":11,"ignore_eos":true}`)
	// 30 ms + 10 x 2 ms = 50 ms, never less.
	if elapsed := time.Since(start); code != 200 || elapsed < 50*time.Millisecond {
		t.Fatalf("%d after %v: %s", code, elapsed, body)
	}
	if _, err := (&WASMCalculators{Dirs: ModuleDirs{Builtin: filepath.Join(t.TempDir(), "none")}}).Resolve("wasm:constant", latency.Config{}); err == nil {
		t.Fatal("a missing module directory must be an error")
	}
}

// TestEngineRunsOnAStepCostModule: --step-cost-module wasm:stepcost prices the engine's steps
// through the built-in step-cost module; a module that is not a step-cost module is refused at
// start, naming why.
func TestEngineRunsOnAStepCostModule(t *testing.T) {
	w := &WASMCalculators{Dirs: ModuleDirs{Builtin: wasmtest.BuiltinDir(t), Cache: wasmtest.CacheDir(t)}}
	defer w.Close(context.Background())
	args := []string{"--model", "meta-llama/Llama-2-7b-hf", "--seed", "1", "--latency-calculator", "engine",
		"--max-num-seqs", "16", "--max-model-len", "4096", "--step-cost-module"}
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	cfg, err := config.Parse(append(args, "wasm:constant"), config.Environment{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, WithStepCostResolver(w.ResolveStepCost), quiet); err == nil || !strings.Contains(err.Error(), "step_cost") {
		t.Fatalf("a schedule calculator as the step-cost module: %v", err)
	}
	ts := startSimWith(t, config.Environment{}, []Option{WithStepCostResolver(w.ResolveStepCost)}, append(args, "wasm:stepcost")...)
	sim := ts.sim
	start := time.Now()
	code, _, body := post(t, ts.url()+"/v1/completions",
		`{"model":"meta-llama/Llama-2-7b-hf","prompt":"hello world","max_tokens":30,"ignore_eos":true}`)
	took := time.Since(start)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	// 30 steps of Llama-2-7B alone on an H100 as the module prices them: about 6 ms each.
	if took < 150*time.Millisecond || took > 3*time.Second {
		t.Errorf("30 tokens took %v through the step-cost module", took)
	}
	if err := sim.ranks[0].engine.cost.Err(); err != nil {
		t.Errorf("the module failed a step: %v", err)
	}
}
