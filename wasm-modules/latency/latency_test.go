package latency

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"time-to-first-token":"10ms","inter-token-latency":0.5,"prefill-time-per-token":"100",
		"time-to-first-token-std-dev":"3ms","time-factor-under-load":2,"latency-calculator":"constant","seed":7}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.TimeToFirstToken != 10*time.Millisecond || c.InterTokenLatency != 500*time.Microsecond ||
		c.PrefillTimePerToken != 100*time.Millisecond || c.TimeToFirstTokenStdDev != 3*time.Millisecond ||
		c.TimeFactorUnderLoad != 2 {
		t.Fatalf("parsed %+v", c)
	}
	bad := map[string]string{
		`{"time-to-first-token":"10ms","time-to-first-token-std-dev":"4ms"}`: "exceeds 30%",
		`{"inter-token-latency":"-1ms"}`:                                     "negative",
		`{"inter-token-latency":"fast"}`:                                     "neither a duration",
		`{"time-factor-under-load":0.5}`:                                     "number >= 1",
		`{"ttft":"1ms"}`:                                                     `unknown latency flag "ttft"`,
		`[1]`:                                                                "JSON object",
	}
	for in, want := range bad {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

// timeline is m's schedule in the ABI layout, TTFT first.
func timeline(t *testing.T, m *Model, in Input) []time.Duration {
	t.Helper()
	got, err := m.Timeline(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestScheduleWithoutJitter(t *testing.T) {
	m := NewModel(Config{TimeToFirstToken: 10e6, InterTokenLatency: 1e6, TimeFactorUnderLoad: 3}, ConstantTTFT)
	cases := []struct {
		name              string
		running, maxSeqs  int
		wantTTFT, wantGap time.Duration
	}{
		{"idle", 1, 5, 10e6, 1e6},
		{"half loaded", 3, 5, 20e6, 2e6},
		{"full", 5, 5, 30e6, 3e6},
		{"over full clamps", 9, 5, 30e6, 3e6},
		{"no running counts as one", 0, 5, 10e6, 1e6},
		{"single seq at max-num-seqs loads fully", 1, 1, 30e6, 3e6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := timeline(t, m, Input{OutputTokens: 4, RunningRequests: c.running, MaxNumSeqs: c.maxSeqs})
			if len(got) != 4 || got[0] != c.wantTTFT || got[1] != c.wantGap || got[3] != c.wantGap {
				t.Fatalf("schedule %v, want ttft %d and 3 gaps of %d", got, c.wantTTFT, c.wantGap)
			}
		})
	}
	if got := timeline(t, m, Input{OutputTokens: 0}); len(got) != 1 {
		t.Fatalf("zero output tokens: %v, want TTFT only", got)
	}
}

func TestJitterIsDeterministicAndClamped(t *testing.T) {
	m := NewModel(Config{TimeToFirstToken: 100e6, TimeToFirstTokenStdDev: 30e6, InterTokenLatency: 10e6,
		InterTokenLatencyStdDev: 3e6, TimeFactorUnderLoad: 1}, ConstantTTFT)
	a := timeline(t, m, Input{OutputTokens: 20000, Rand: 42})
	b := timeline(t, m, Input{OutputTokens: 20000, Rand: 42})
	c := timeline(t, m, Input{OutputTokens: 20000, Rand: 43})
	var sum, sq float64
	distinct := false
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different value at %d", i)
		}
		distinct = distinct || a[i] != c[i]
		if i == 0 {
			continue
		}
		if a[i] < 3e6 || a[i] > 17e6 {
			t.Fatalf("gap %d = %d outside [0.3, 1.7] x 10ms", i, a[i])
		}
		sum += float64(a[i])
		sq += float64(a[i]) * float64(a[i])
	}
	n := float64(len(a) - 1)
	mean := sum / n
	std := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean-10e6) > 0.1e6 || math.Abs(std-3e6) > 0.15e6 {
		t.Fatalf("gaps mean %.0f std %.0f, want about 10ms and 3ms", mean, std)
	}
	if !distinct {
		t.Fatal("different seeds gave identical schedules")
	}
}

func TestLn(t *testing.T) {
	for _, x := range []float64{1, 0.5, 0.999999, 1e-300, 0.1, 0.7071, 0.3333} {
		if got, want := ln(x), math.Log(x); math.Abs(got-want) > 1e-14*math.Max(1, math.Abs(want)) {
			t.Errorf("ln(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestNormalTable(t *testing.T) {
	// Symmetric, increasing, and matching known quantiles.
	for i := 1; i < 4096; i++ {
		if normalTable[i] <= normalTable[i-1] {
			t.Fatalf("table not increasing at %d", i)
		}
	}
	if math.Abs(normalTable[0]+normalTable[4095]) > 1e-9 || math.Abs(normalTable[2047]+normalTable[2048]) > 1e-9 {
		t.Fatal("table not symmetric")
	}
	if q := normalQuantile(0.975); math.Abs(q-1.959963985) > 1e-8 {
		t.Fatalf("quantile(0.975) = %v", q)
	}
	if q := normalQuantile(0.001); math.Abs(q+3.090232306) > 1e-8 {
		t.Fatalf("quantile(0.001) = %v", q)
	}
}
