package wasmhost_test

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/wasmhost"
	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// The engine prices its steps through a StepCost as through a native *stepcost.Model.
var _ enginemodel.StepCoster = (*wasmhost.StepCost)(nil)

func llamaConfig(t *testing.T) stepcost.Config {
	t.Helper()
	arch, ok := stepcost.LookupModel("Llama-2-70b-hf")
	if !ok {
		t.Fatal("Llama-2-70b-hf is not in the catalogue")
	}
	return stepcost.Config{Model: arch, Hardware: stepcost.GPUs["H100-SXM-80GB"], TensorParallelSize: 4}
}

func wantSeconds(t *testing.T, m *stepcost.Model, b *stepcost.Batch) float64 {
	ns, err := stepcost.Nanoseconds(m.StepTime(b))
	if err != nil {
		t.Error(err)
	}
	return float64(ns) / 1e9
}

// Many goroutines share a step cost of two instances, with failing steps among the good
// ones: every good step is priced exactly, every bad one fails with the module's message
// (its instance discarded), and Err keeps a failure. Run with -race to check that an
// instance is never used by two goroutines at once.
func TestStepCostPoolHammer(t *testing.T) {
	h := newHost(t, wasmhost.Config{BuiltinDir: wasmtest.BuiltinDir(t), PoolSize: 2})
	cfg := llamaConfig(t)
	sc, err := h.StepCost(stepcost.ModuleName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	native, _ := cfg.Build()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				b := stepcost.Batch{DecodeSeqs: 1 + (g*200+i)%128, DecodeContext: 1000 * (1 + i), SampledSeqs: 1 + (g*200+i)%128}
				if i%37 == 5 {
					b.DecodeContext = -1
					if sc.StepTime(&b) != 0 {
						errs <- errors.New("a failed step was not 0")
					}
					continue
				}
				if got := sc.StepTime(&b); got != wantSeconds(t, native, &b) {
					errs <- errors.New("a step priced differently from the native core")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := sc.Err(); !wasmhost.IsGuestError(err) || !strings.Contains(err.Error(), "stepcost: batch: decode_context must not be negative, got -1") {
		t.Fatalf("Err: %v", err)
	}
}

// A copy of the stepcost module in its own directory is a user's module, loaded by path and
// run with the user modules' call timeout.
func TestUserStepCostByPath(t *testing.T) {
	mine := wasmtest.UserCopy(t, stepcost.ModuleName, "mine.wasm")
	h := newHost(t, wasmhost.Config{CallTimeout: time.Second})
	cfg := llamaConfig(t)
	cfg.Coefficients = &stepcost.Coefficients{ComputeEfficiency: 0.6, MemoryEfficiency: 0.7, StepOverheadUs: 300, RequestOverheadUs: 4321}
	sc, err := h.StepCost(mine, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Info().Builtin {
		t.Fatal("a step cost loaded by path must run as a user module")
	}
	native, _ := cfg.Build()
	if sc.RequestOverhead() != 0.004321 {
		t.Fatalf("request overhead %v", sc.RequestOverhead())
	}
	b := stepcost.Batch{PrefillSeqs: 2, PrefillTokens: 3000, PrefillAttention: 3e6, DecodeSeqs: 40, DecodeContext: 90000, SampledSeqs: 41}
	if got, err := sc.StepTimeErr(&b); err != nil || got != wantSeconds(t, native, &b) {
		t.Fatalf("step time %v, %v", got, err)
	}
	if _, err := sc.StepTimeErr(&stepcost.Batch{PrefillAttention: math.NaN()}); !wasmhost.IsGuestError(err) {
		t.Fatalf("a NaN attention: %v", err)
	}
	sc.Close()
	if _, err := sc.StepTimeErr(&b); !errors.Is(err, wasmhost.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if sc.StepTime(&b) != 0 || !errors.Is(sc.Err(), wasmhost.ErrClosed) {
		t.Fatalf("StepTime after Close: Err %v", sc.Err())
	}
}
