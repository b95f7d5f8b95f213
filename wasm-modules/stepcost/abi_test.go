package stepcost_test

import (
	"math"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// The native core gives ABI.md's worked examples exactly (the stepcost guest is held to the
// same values in tests/conformance).
func TestABIWorkedExamples(t *testing.T) {
	for _, ex := range abi.StepCostExamples {
		m, err := stepcost.ParseConfig([]byte(ex.Config))
		if err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		b := stepcost.BatchOf(ex.Args)
		if err := b.Validate(); err != nil {
			t.Fatalf("%s: %v", ex.Name, err)
		}
		if ns, err := stepcost.Nanoseconds(m.StepTime(&b)); err != nil || ns != ex.StepTimeNs {
			t.Errorf("%s: lens_step_time %d (%v), ABI.md says %d", ex.Name, ns, err, ex.StepTimeNs)
		}
		if ns, err := stepcost.Nanoseconds(m.RequestOverhead()); err != nil || ns != abi.StepCostExampleRequestOverheadNs {
			t.Errorf("%s: lens_request_overhead %d (%v), ABI.md says %d", ex.Name, ns, err, abi.StepCostExampleRequestOverheadNs)
		}
	}
}

func TestNanoseconds(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want int64
	}{{0, 0}, {1, 1e9}, {0.0225, 22_500_000}, {2.5e-9, 3}, {1.49e-9, 1}, {9e9, 9e18}} {
		if got, err := stepcost.Nanoseconds(c.s); err != nil || got != c.want {
			t.Errorf("Nanoseconds(%v) = %d, %v; want %d", c.s, got, err, c.want)
		}
	}
	for _, s := range []float64{-1e-9, math.NaN(), math.Inf(1), 1e10} {
		if _, err := stepcost.Nanoseconds(s); err == nil || !strings.Contains(err.Error(), "outside the ABI's range") {
			t.Errorf("Nanoseconds(%v): %v", s, err)
		}
	}
}

func TestBatchValidate(t *testing.T) {
	ok := stepcost.Batch{PrefillSeqs: 1, PrefillTokens: 8, PrefillAttention: 36, DecodeSeqs: 2, DecodeContext: 10, SampledSeqs: 2}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*stepcost.Batch)
		want string
	}{
		{func(b *stepcost.Batch) { b.PrefillSeqs = -1 }, "prefill_seqs must not be negative, got -1"},
		{func(b *stepcost.Batch) { b.DecodeContext = -5 }, "decode_context must not be negative, got -5"},
		{func(b *stepcost.Batch) { b.SampledSeqs = -2 }, "sampled_seqs must not be negative"},
		{func(b *stepcost.Batch) { b.PrefillAttention = math.NaN() }, "prefill_attention must be a finite number >= 0, got NaN"},
		{func(b *stepcost.Batch) { b.PrefillAttention = math.Inf(1) }, "got +Inf"},
		{func(b *stepcost.Batch) { b.PrefillAttention = -0.5 }, "got -0.5"},
	} {
		b := ok
		c.edit(&b)
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", b, err, c.want)
		}
	}
}

// A model's Config builds the same model again, through its JSON as a module receives it.
func TestModelConfigRoundTrips(t *testing.T) {
	arch, _ := stepcost.LookupModel("Mixtral-8x7B-v0.1")
	coef := stepcost.Fitted
	coef.StepOverheadUs += 123.25
	m, err := stepcost.NewModel(arch, stepcost.GPUs["H200-SXM-141GB"], 4, coef)
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.Config()
	again, err := stepcost.ParseConfig(cfg.JSON())
	if err != nil {
		t.Fatal(err)
	}
	b := stepcost.Batch{PrefillSeqs: 1, PrefillTokens: 700, PrefillAttention: 700 * 350.5, DecodeSeqs: 12, DecodeContext: 9000, SampledSeqs: 13}
	if again.StepTime(&b) != m.StepTime(&b) || again.RequestOverhead() != m.RequestOverhead() || again.Coef != coef {
		t.Fatalf("round trip: %+v, want %+v", again, m)
	}
}
