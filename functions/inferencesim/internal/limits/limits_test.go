package limits

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/wasm-modules/latency"
)

func TestCheckLatency(t *testing.T) {
	ok := latency.Config{TimeToFirstToken: MaxFixedLatency, InterTokenLatency: MaxPerTokenLatency, TimeFactorUnderLoad: 1}
	if errs := CheckLatency(ok); len(errs) != 0 {
		t.Fatalf("settings at the bounds refused: %v", errs)
	}
	bad := ok
	bad.TimeToFirstToken = MaxFixedLatency + time.Nanosecond
	bad.InterTokenLatency = MaxPerTokenLatency + time.Nanosecond
	bad.TimeFactorUnderLoad = MaxLoadFactor + 1
	errs := CheckLatency(bad)
	if len(errs) != 3 {
		t.Fatalf("three settings over their bounds, %d errors: %v", len(errs), errs)
	}
	// Fixed delays first, then per-token ones, then the load factor: one order for the
	// flags and /admin/config.
	for i, want := range []string{"--time-to-first-token must not exceed 10m0s", "--inter-token-latency must not exceed 10s", "--time-factor-under-load must be within 1-100"} {
		if !strings.HasPrefix(errs[i].Error(), want) {
			t.Errorf("error %d %q, want prefix %q", i, errs[i], want)
		}
	}
	for _, f := range []float64{0.5, math.NaN(), math.Inf(1)} {
		c := ok
		c.TimeFactorUnderLoad = f
		if len(CheckLatency(c)) != 1 {
			t.Errorf("load factor %v accepted", f)
		}
	}
}

func TestCheckLoRA(t *testing.T) {
	for _, name := range []string{"a", "org/adapter-v1.2_x:y@z+w", strings.Repeat("n", MaxLoRANameLen)} {
		if err := CheckLoRA(name, "/path/to/adapter"); err != nil {
			t.Errorf("name %q refused: %v", name, err)
		}
	}
	for name, want := range map[string]string{
		"":                                    "required",
		strings.Repeat("n", MaxLoRANameLen+1): "at most 128",
		"has space":                           "may only contain",
		"quote\"":                             "may only contain",
		"naïve":                               "may only contain",
	} {
		if err := CheckLoRA(name, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("name %q: %v, want %q", name, err, want)
		}
	}
	if err := CheckLoRA("a", strings.Repeat("p", MaxLoRAPathLen+1)); err == nil {
		t.Error("over-long path accepted")
	}
	for _, p := range []string{"a\nb", "a\x00", "a\x7f"} {
		if err := CheckLoRA("a", p); err == nil {
			t.Errorf("path %q with a control character accepted", p)
		}
	}
}

func TestCheckToken(t *testing.T) {
	for _, tok := range []string{"", "sk-abc_123", strings.Repeat("t", MaxTokenLen)} {
		if err := CheckToken(tok); err != nil {
			t.Errorf("token %q refused: %v", tok, err)
		}
	}
	for _, tok := range []string{"a b", "a\r\nX-Injected: 1", "é", strings.Repeat("t", MaxTokenLen+1)} {
		if err := CheckToken(tok); err == nil {
			t.Errorf("token %q accepted", tok)
		}
	}
}

func TestValidHostname(t *testing.T) {
	for _, h := range []string{"localhost", "a.b-c.example", "x1", strings.Repeat("a", 63) + ".b"} {
		if !ValidHostname(h) {
			t.Errorf("%q refused", h)
		}
	}
	for _, h := range []string{"", ".", "a..b", "-a", "a-", "a_b", "a b", "a/b", strings.Repeat("a", 64), strings.Repeat("a.", 127) + "aa"} {
		if ValidHostname(h) {
			t.Errorf("%q accepted", h)
		}
	}
}
