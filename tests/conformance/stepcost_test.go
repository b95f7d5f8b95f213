package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/latency"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// stepCostModels are the catalogue models the comparison covers: dense ones of every shape
// (multi-head and grouped-query attention, tied embeddings, a head_dim that is not
// hidden/heads) and the mixture-of-experts ones.
var stepCostModels = []string{
	"meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.2-1B",
	"Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x22B-v0.1", "Qwen/Qwen3-30B-A3B",
}

// randomBatch is one engine step of the given kind, composed as the engine composes its
// batches: prefill chunks after some cached context, decodes over their contexts.
func randomBatch(rng *rand.Rand, kind string) stepcost.Batch {
	var b stepcost.Batch
	if kind != "decode" {
		b.PrefillSeqs = 1 + rng.IntN(8)
		for range b.PrefillSeqs {
			n, before := 1+rng.IntN(2048), rng.IntN(8192)
			b.PrefillTokens += n
			b.PrefillContext += before
			b.PrefillAttention += float64(n) * (float64(before) + float64(n+1)/2)
		}
		b.SampledSeqs = rng.IntN(b.PrefillSeqs + 1) // the chunks that end their prompt
	}
	if kind != "prefill" {
		b.DecodeSeqs = 1 + rng.IntN(256)
		for range b.DecodeSeqs {
			b.DecodeContext += 1 + rng.IntN(32768)
		}
		b.SampledSeqs += b.DecodeSeqs
	}
	return b
}

// The heart of the step-cost ABI's conformance: through the real host, the stepcost module
// returns exactly the native core's step time (its nanoseconds, / 1e9) and request overhead,
// for every catalogue model of the list at TP 1, 2, 4 and 8, on every catalogue GPU, with the
// fitted and with random coefficients, over prefill-only, decode-only and mixed batches, the
// empty batch and batches at the ABI's limits.
func TestStepCostModuleMatchesTheNativeCore(t *testing.T) {
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), PoolSize: 1})
	rng := rand.New(rand.NewPCG(3, 4))
	gpus := stepcost.GPUNames()
	configs := 0
	for i, name := range stepCostModels {
		arch, ok := stepcost.LookupModel(name)
		if !ok {
			t.Fatalf("%s is not in the catalogue", name)
		}
		for j, tp := range []int{1, 2, 4, 8} {
			cfg := stepcost.Config{Model: arch, Hardware: stepcost.GPUs[gpus[(i+j)%len(gpus)]], TensorParallelSize: tp}
			if (i+j)%2 == 1 {
				cfg.Coefficients = &stepcost.Coefficients{ComputeEfficiency: 0.2 + 0.8*rng.Float64(), MemoryEfficiency: 0.2 + 0.8*rng.Float64(),
					StepOverheadUs: 2000 * rng.Float64(), LayerOverheadUs: 30 * rng.Float64(), SeqOverheadUs: 20 * rng.Float64(),
					AllReduceUs: 40 * rng.Float64(), RequestOverheadUs: 30000 * rng.Float64()}
			}
			label := fmt.Sprintf("%s TP%d on %s", name, tp, cfg.Hardware.Name)
			native, err := cfg.Build()
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			module, err := h.StepCost(stepcost.ModuleName, cfg)
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			configs++
			if want := nanos(t, native.RequestOverhead()); module.RequestOverhead() != float64(want)/1e9 {
				t.Fatalf("%s: request overhead %v, native %d ns", label, module.RequestOverhead(), want)
			}
			batches := []stepcost.Batch{
				{}, // an empty step takes no time
				{DecodeSeqs: 1, DecodeContext: 1, SampledSeqs: 1},
				{PrefillSeqs: 1, PrefillTokens: 1, PrefillAttention: 1, SampledSeqs: 1},
				// At the i32 limits of the ABI's counts.
				{PrefillSeqs: math.MaxInt32, PrefillTokens: math.MaxInt32, PrefillAttention: 1e15, PrefillContext: 1 << 40,
					DecodeSeqs: math.MaxInt32, DecodeContext: 1 << 40, SampledSeqs: math.MaxInt32},
			}
			for k := 0; k < 300; k++ {
				batches = append(batches, randomBatch(rng, [...]string{"prefill", "decode", "mixed"}[k%3]))
			}
			for _, b := range batches {
				want := nanos(t, native.StepTime(&b))
				got, err := module.StepTimeErr(&b)
				if err != nil {
					t.Fatalf("%s %+v: %v", label, b, err)
				}
				if got != float64(want)/1e9 || module.StepTime(&b) != got {
					t.Fatalf("%s %+v: module %v s, native %d ns", label, b, got, want)
				}
			}
			if err := module.Err(); err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			module.Close()
		}
	}
	if configs != 4*len(stepCostModels) {
		t.Fatalf("compared %d configurations", configs)
	}
}

func nanos(tb testing.TB, seconds float64) int64 {
	tb.Helper()
	ns, err := stepcost.Nanoseconds(seconds)
	if err != nil {
		tb.Fatal(err)
	}
	return ns
}

// ABI.md section 8.1's worked examples hold through the host: the exact nanoseconds.
func TestStepCostWorkedExamples(t *testing.T) {
	h := builtinHost(t)
	for _, ex := range abi.StepCostExamples {
		module, err := h.StepCostJSON(stepcost.ModuleName, []byte(ex.Config))
		if err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		b := stepcost.BatchOf(ex.Args)
		got, err := module.StepTimeErr(&b)
		if err != nil || math.Round(got*1e9) != float64(ex.StepTimeNs) {
			t.Errorf("%s: lens_step_time %v s (%v), ABI.md says %d ns", ex.Name, got, err, ex.StepTimeNs)
		}
		if got := module.RequestOverhead(); math.Round(got*1e9) != float64(abi.StepCostExampleRequestOverheadNs) {
			t.Errorf("%s: lens_request_overhead %v s, ABI.md says %d ns", ex.Name, got, abi.StepCostExampleRequestOverheadNs)
		}
	}
}

// A configuration the core refuses is refused by the module with the core's own message, when
// the step cost is configured (never per step).
func TestStepCostModuleRefusesBadConfigurations(t *testing.T) {
	h := builtinHost(t)
	llama, _ := stepcost.LookupModel("meta-llama/Llama-2-7b-hf")
	qwen, _ := stepcost.LookupModel("Qwen/Qwen3-14B")
	h100 := stepcost.GPUs["H100-SXM-80GB"]
	good := stepcost.Config{Model: llama, Hardware: h100, TensorParallelSize: 1}
	goodJSON := string(good.JSON())
	with := func(edit func(*stepcost.Config)) string {
		c := good
		edit(&c)
		return string(c.JSON())
	}
	for _, c := range []struct{ name, config, want string }{
		{"unknown field", strings.Replace(goodJSON, `"tensor_parallel_size":1`, `"tensor_parallel_size":1,"max_num_seqs":256`, 1), `unknown field "max_num_seqs"`},
		{"unknown coefficient", strings.Replace(goodJSON, `"tensor_parallel_size":1`, `"tensor_parallel_size":1,"coefficients":{"compute_efficiency":0.5,"warp":1}`, 1), `unknown field "warp"`},
		{"TP not dividing the heads", with(func(c *stepcost.Config) { c.TensorParallelSize = 3 }), "tensor_parallel_size 3 does not divide meta-llama/Llama-2-7b-hf's 32 attention heads"},
		{"TP against the KV heads", with(func(c *stepcost.Config) { c.Model, c.TensorParallelSize = qwen, 20 }), "neither divides nor is a multiple of Qwen/Qwen3-14B's 8 KV heads"},
		{"no TP", with(func(c *stepcost.Config) { c.TensorParallelSize = 0 }), "tensor_parallel_size must be between 1 and 64, got 0"},
		{"efficiency above 1", with(func(c *stepcost.Config) {
			c.Coefficients = &stepcost.Coefficients{ComputeEfficiency: 1.5, MemoryEfficiency: 0.5}
		}), "compute_efficiency and memory_efficiency must be in (0, 1]"},
		{"hardware without a name", with(func(c *stepcost.Config) { c.Hardware.Name = "" }), "hardware: name is required"},
		{"a layerless model", with(func(c *stepcost.Config) { c.Model.Layers = 0 }), "num_layers must be positive, got 0"},
		{"not JSON", `{"model":`, "step-cost configuration: unexpected EOF"},
		{"empty", `{}`, "the model: num_layers must be positive, got 0"},
	} {
		_, nativeErr := stepcost.ParseConfig([]byte(c.config))
		if nativeErr == nil || !strings.Contains(nativeErr.Error(), c.want) {
			t.Fatalf("%s: the native core says %v, want %q", c.name, nativeErr, c.want)
		}
		_, err := h.StepCostJSON(stepcost.ModuleName, []byte(c.config))
		if !wasmhost.IsGuestError(err) || !strings.Contains(err.Error(), nativeErr.Error()) {
			t.Errorf("%s: the module says %v, want the core's %q", c.name, err, nativeErr)
		}
	}
	// The good configuration is accepted, so the refusals above are the edits'.
	if _, err := h.StepCostJSON(stepcost.ModuleName, []byte(goodJSON)); err != nil {
		t.Fatal(err)
	}
}

// A batch the core is not defined for is the module's error, named; StepTime then returns 0
// and Err keeps the first failure; the instance is discarded and the next step is priced by a
// fresh one, configured as the first was.
func TestStepCostBadBatch(t *testing.T) {
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), PoolSize: 1})
	arch, _ := stepcost.LookupModel("mistralai/Mixtral-8x7B-v0.1")
	cfg := stepcost.Config{Model: arch, Hardware: stepcost.GPUs["A100-SXM-80GB"], TensorParallelSize: 2}
	module, err := h.StepCost(stepcost.ModuleName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	native, _ := cfg.Build()
	ok := stepcost.Batch{DecodeSeqs: 3, DecodeContext: 300, SampledSeqs: 3}
	for _, c := range []struct {
		b    stepcost.Batch
		want string
	}{
		{stepcost.Batch{PrefillSeqs: 1, PrefillTokens: 4, PrefillAttention: math.NaN()}, "batch: prefill_attention must be a finite number >= 0, got NaN"},
		{stepcost.Batch{DecodeSeqs: 2, DecodeContext: -7}, "batch: decode_context must not be negative, got -7"},
		{stepcost.Batch{DecodeSeqs: -1}, "batch: decode_seqs must not be negative, got -1"},
	} {
		_, err := module.StepTimeErr(&c.b)
		var g *wasmhost.GuestError
		if !errors.As(err, &g) || g.Export != abi.ExportStepTime || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.b, err, c.want)
		}
		if got, err := module.StepTimeErr(&ok); err != nil || got != float64(nanos(t, native.StepTime(&ok)))/1e9 {
			t.Fatalf("the step after a failure: %v, %v", got, err)
		}
	}
	if module.Err() != nil {
		t.Fatal("StepTimeErr recorded its failures")
	}
	if d := module.StepTime(&stepcost.Batch{PrefillAttention: math.Inf(1)}); d != 0 {
		t.Fatalf("a failed StepTime returned %v", d)
	}
	module.StepTime(&stepcost.Batch{SampledSeqs: -3})
	if err := module.Err(); err == nil || !strings.Contains(err.Error(), "got +Inf") {
		t.Fatalf("Err after two failures: %v, want the first", err)
	}
	// A count the ABI cannot carry is refused before any call.
	if _, err := module.StepTimeErr(&stepcost.Batch{DecodeSeqs: math.MaxInt32 + 1}); err == nil || !strings.Contains(err.Error(), "must fit in an i32") {
		t.Fatalf("a count past i32: %v", err)
	}
	module.Close()
	if _, err := module.StepTimeErr(&ok); !errors.Is(err, wasmhost.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A step-cost module is not a schedule calculator, and the other way round: each use refuses
// the other kind of module with the reason.
func TestStepCostAndScheduleCalculatorsAreDistinct(t *testing.T) {
	h := builtinHost(t)
	arch, _ := stepcost.LookupModel("Llama-3.1-8B")
	cfg := stepcost.Config{Model: arch, Hardware: stepcost.GPUs["L40S-48GB"], TensorParallelSize: 1}
	if _, err := h.StepCost(latency.NameConstant, cfg); err == nil || !strings.Contains(err.Error(), "latency calculator constant: it does not declare the step_cost capability") {
		t.Fatalf("a schedule calculator as a step cost: %v", err)
	}
	if _, err := h.Calculator(stepcost.ModuleName, nil); err == nil || !strings.Contains(err.Error(), "latency calculator stepcost: it does not export lens_calc_schedule") {
		t.Fatalf("a step-cost module as a schedule calculator: %v", err)
	}
	if _, err := h.StepCost("mooncake_trace", cfg); !errors.Is(err, wasmhost.ErrUnknownModule) {
		t.Fatalf("a parser as a step cost: %v", err)
	}
}

// stepCostWAT is a step-cost module in WebAssembly text: a user's own model, shipped without
// rebuilding Lensfn. stepTime is the whole lens_step_time function (empty: none); schedule
// exports lens_calc_schedule too; stepCost declares the capability.
func stepCostWAT(name, stepTime string, stepCost, schedule bool) watFile {
	caps := ""
	if stepCost {
		caps = `,"capabilities":{"step_cost":true}`
	}
	desc := fmt.Sprintf(`{"abi_version":%d,"kind":"latency-calculator","name":"%s","version":"0.0.1"%s}`, abi.Version, name, caps)
	const message = "decode_seqs above 100 are not calibrated"
	sched := ""
	if schedule {
		sched = `(func (export "lens_calc_schedule") (param i32 i32 i32 i32 i32 i32 i64) (result i64) (i64.const 0))`
	}
	return watFile{name: name, kind: abi.KindLatencyCalculator, source: fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (data (i32.const 16) %q)
  (data (i32.const 1024) %q)
  (func (export "lens_abi_version") (result i32) (i32.const %d))
  (func (export "lens_describe") (result i64) (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const %d)))
  (func (export "lens_error") (result i64) (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const %d)))
  (func (export "lens_buffer") (param i32) (result i32) (i32.const 4096))
  (func (export "lens_calc_configure") (param i32 i32) (result i64) (i64.const 0))
  (func (export "lens_request_overhead") (result i64) (i64.const 1500000))
  %s
  %s)`, desc, message, abi.Version, len(desc), len(message), stepTime, sched)}
}

// calibrated is a user's model: 2 ms + 20 us per new token + 1 ns per token of decode
// context, and a failure (abi.Failed with its message) past 100 decodes.
const calibrated = `(func (export "lens_step_time") (param $ps i32) (param $pt i32) (param $pa f64) (param $pc i64)
    (param $ds i32) (param $dc i64) (param $ss i32) (result i64)
    (if (i32.gt_s (local.get $ds) (i32.const 100)) (then (return (i64.const -1))))
    (i64.add (i64.const 2000000)
      (i64.add (i64.mul (i64.extend_i32_u (i32.add (local.get $pt) (local.get $ds))) (i64.const 20000)) (local.get $dc))))`

// A user's step-cost module in WebAssembly text loads from LENS_MODULE_DIR or by path and
// prices steps as written; the host refuses modules that break the step_cost contract.
func TestUserStepCostModules(t *testing.T) {
	ctx := context.Background()
	dir := watModuleDir(t,
		stepCostWAT("calibrated", calibrated, true, false),
		stepCostWAT("negative", `(func (export "lens_step_time") (param i32 i32 f64 i64 i32 i64 i32) (result i64) (i64.const -5))`, true, false))
	h := newHost(t, wasmhost.Config{ModuleDirs: []string{dir}})
	for _, nameOrPath := range []string{"calibrated", dir + "/calibrated.wasm"} {
		module, err := h.StepCostJSON(nameOrPath, []byte(`{"anything":"the module reads"}`))
		if err != nil {
			t.Fatal(err)
		}
		if module.Info().Builtin || module.RequestOverhead() != 0.0015 {
			t.Fatalf("%s: %+v, request overhead %v", nameOrPath, module.Info(), module.RequestOverhead())
		}
		got, err := module.StepTimeErr(&stepcost.Batch{PrefillSeqs: 1, PrefillTokens: 100, DecodeSeqs: 28, DecodeContext: 5000, SampledSeqs: 28})
		if err != nil || got != 0.004565 { // 2 ms + 128 x 20 us + 5000 ns
			t.Fatalf("%s: %v, %v", nameOrPath, got, err)
		}
		if _, err := module.StepTimeErr(&stepcost.Batch{DecodeSeqs: 101}); !wasmhost.IsGuestError(err) || !strings.Contains(err.Error(), "calibrated: decode_seqs above 100 are not calibrated") {
			t.Fatalf("%s: the module's failure: %v", nameOrPath, err)
		}
	}
	negative, err := h.StepCostJSON("negative", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := negative.StepTimeErr(&stepcost.Batch{DecodeSeqs: 1}); !errors.Is(err, wasmhost.ErrBadModule) || !strings.Contains(err.Error(), "lens_step_time returned -5") {
		t.Fatalf("a negative step time: %v", err)
	}

	for _, c := range []struct {
		mod  watFile
		want string
	}{
		{stepCostWAT("nostep", "", true, false), `"nostep" declares step_cost but does not export lens_step_time`},
		{stepCostWAT("badsig", `(func (export "lens_step_time") (param i32 i32) (result i64) (i64.const 0))`, true, false),
			`"badsig" exports lens_step_time with parameters (i32, i32) and results (i64), want (i32, i32, f64, i64, i32, i64, i32) and i64`},
		{stepCostWAT("noschedule", calibrated, false, false), `latency calculator "noschedule" does not export lens_calc_schedule`},
	} {
		_, err := wasmhost.New(ctx, wasmhost.Config{ModuleDirs: []string{watModuleDir(t, c.mod)}})
		if !errors.Is(err, wasmhost.ErrBadModule) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.mod.name, err, c.want)
		}
	}
	// Both kinds of calculator in one module is allowed.
	both := newHost(t, wasmhost.Config{ModuleDirs: []string{watModuleDir(t, stepCostWAT("both", calibrated, true, true))}})
	if _, err := both.StepCostJSON("both", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := both.Calculator("both", nil); err != nil {
		t.Fatal(err)
	}
}

// quantized is the native core rounded as the ABI rounds: whole nanoseconds.
type quantized struct{ m *stepcost.Model }

func (q quantized) StepTime(b *stepcost.Batch) float64 {
	ns, _ := stepcost.Nanoseconds(q.m.StepTime(b))
	return float64(ns) / 1e9
}

// The engine model runs a workload through the stepcost module as through the native core:
// exactly the same prediction as the core rounded to the ABI's nanoseconds, and within a
// microsecond per request of the unrounded core, with KV-cache pressure (preemptions) on the
// way.
func TestEnginePredictsTheSameThroughTheStepCostModule(t *testing.T) {
	h := builtinHost(t)
	arch, _ := stepcost.LookupModel("Qwen/Qwen3-8B")
	cfg := stepcost.Config{Model: arch, Hardware: stepcost.GPUs["L40S-48GB"], TensorParallelSize: 2}
	native, err := cfg.Build()
	if err != nil {
		t.Fatal(err)
	}
	module, err := h.StepCost(stepcost.ModuleName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var arrivals []enginemodel.Arrival
	at := 0.0
	for range 600 {
		at += rng.ExpFloat64() / 25
		arrivals = append(arrivals, enginemodel.Arrival{At: at, PromptTokens: 200 + rng.IntN(3000), OutputTokens: 20 + rng.IntN(400)})
	}
	engine := enginemodel.Config{MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, BlockSize: 16, KVBlocks: 4000}
	predict := func(cost enginemodel.StepCoster, overhead float64) *enginemodel.Prediction {
		p, err := enginemodel.Predict(arrivals, enginemodel.Options{Engine: engine, Cost: cost, RequestOverhead: overhead})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	viaModule := predict(module, module.RequestOverhead())
	if err := module.Err(); err != nil {
		t.Fatal(err)
	}
	rounded := predict(quantized{native}, module.RequestOverhead())
	exact := predict(native, native.RequestOverhead())
	if viaModule.Counters != rounded.Counters || !slices.Equal(viaModule.Outcomes, rounded.Outcomes) || viaModule.End != rounded.End {
		t.Fatalf("through the module: %+v, end %v; the rounded core: %+v, end %v", viaModule.Counters, viaModule.End, rounded.Counters, rounded.End)
	}
	if viaModule.Counters.Preemptions == 0 || viaModule.Counters.Steps < 1000 {
		t.Fatalf("the workload does not exercise the engine: %+v", viaModule.Counters)
	}
	for i, o := range viaModule.Outcomes {
		e := exact.Outcomes[i]
		if o.Failed != e.Failed || math.Abs(o.TTFT-e.TTFT) > 1e-6 || math.Abs(o.E2E-e.E2E) > 1e-6 {
			t.Fatalf("request %d: through the module %+v, the core %+v", i, o, e)
		}
	}
}
