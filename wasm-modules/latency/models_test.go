package latency

import (
	"sort"
	"testing"
	"time"
)

func mustNew(t *testing.T, name string, p Config) Calculator {
	t.Helper()
	c, err := New(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConstantSchedule(t *testing.T) {
	c := mustNew(t, NameConstant, Config{TimeToFirstToken: 10 * time.Millisecond, InterTokenLatency: 500 * time.Microsecond,
		PrefillTimePerToken: time.Second, KVCacheTransferLatency: 3 * time.Millisecond})
	ttft, gaps, err := c.Schedule(Input{PromptTokens: 100, OutputTokens: 32, RunningRequests: 1, MaxNumSeqs: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ttft != 10*time.Millisecond || len(gaps) != 31 {
		t.Fatalf("ttft %v gaps %d", ttft, len(gaps))
	}
	for _, g := range gaps {
		if g != 500*time.Microsecond { // sub-millisecond values keep their precision
			t.Fatalf("gap %v", g)
		}
	}
	ttft, _, _ = c.Schedule(Input{PromptTokens: 100, OutputTokens: 1, RunningRequests: 1, MaxNumSeqs: 5, RemotePrefill: true}, nil)
	if ttft != 3*time.Millisecond {
		t.Fatalf("P/D decode ttft %v, want the KV transfer latency", ttft)
	}
}

func TestPerTokenSchedule(t *testing.T) {
	c := mustNew(t, NamePerToken, Config{PrefillOverhead: 5 * time.Millisecond, PrefillTimePerToken: 100 * time.Microsecond,
		KVCacheTransferTimePerToken: 10 * time.Microsecond, InterTokenLatency: time.Millisecond})
	ttft, gaps, _ := c.Schedule(Input{PromptTokens: 300, CachedPromptTokens: 100, OutputTokens: 3, RunningRequests: 1, MaxNumSeqs: 5}, nil)
	if want := 5*time.Millisecond + 200*100*time.Microsecond; ttft != want || len(gaps) != 2 {
		t.Fatalf("ttft %v want %v", ttft, want)
	}
	ttft, _, _ = c.Schedule(Input{PromptTokens: 300, OutputTokens: 3, RunningRequests: 1, MaxNumSeqs: 5, RemotePrefill: true}, nil)
	if ttft != 3*time.Millisecond {
		t.Fatalf("remote prefill ttft %v", ttft)
	}
}

func TestAutoPicksConstantWhenTTFTSet(t *testing.T) {
	p := Config{TimeToFirstToken: 7 * time.Millisecond, PrefillTimePerToken: time.Millisecond}
	ttft, _, _ := mustNew(t, NameAuto, p).Schedule(Input{PromptTokens: 50, OutputTokens: 1, RunningRequests: 1, MaxNumSeqs: 1}, nil)
	if ttft != 7*time.Millisecond {
		t.Fatalf("auto with ttft: %v", ttft)
	}
	p.TimeToFirstToken = 0
	ttft, _, _ = mustNew(t, NameAuto, p).Schedule(Input{PromptTokens: 50, OutputTokens: 1, RunningRequests: 1, MaxNumSeqs: 1}, nil)
	if ttft != 50*time.Millisecond {
		t.Fatalf("auto without ttft: %v", ttft)
	}
}

func TestLoadFactor(t *testing.T) {
	cases := []struct {
		factor           float64
		running, maxSeqs int
		want             float64
	}{
		{1, 5, 5, 1}, {3, 1, 5, 1}, {3, 5, 5, 3}, {3, 3, 5, 2}, {3, 9, 5, 3}, {2, 1, 1, 2}, {2, 0, 1, 1},
	}
	for _, c := range cases {
		if got := LoadFactor(c.factor, c.running, c.maxSeqs); got != c.want {
			t.Errorf("LoadFactor(%v,%d,%d)=%v want %v", c.factor, c.running, c.maxSeqs, got, c.want)
		}
	}
	calc := mustNew(t, NameConstant, Config{TimeToFirstToken: 10 * time.Millisecond, InterTokenLatency: time.Millisecond,
		KVCacheTransferLatency: 4 * time.Millisecond, TimeFactorUnderLoad: 3})
	ttft, gaps, _ := calc.Schedule(Input{OutputTokens: 2, RunningRequests: 3, MaxNumSeqs: 5}, nil)
	if ttft != 20*time.Millisecond || gaps[0] != 2*time.Millisecond {
		t.Fatalf("under load: ttft %v gap %v", ttft, gaps[0])
	}
	ttft, _, _ = calc.Schedule(Input{OutputTokens: 2, RunningRequests: 5, MaxNumSeqs: 5, RemotePrefill: true}, nil)
	if ttft != 4*time.Millisecond {
		t.Fatalf("KV transfer must not scale with load: %v", ttft)
	}
}

func TestValidateStdDevBound(t *testing.T) {
	if _, err := New(NameConstant, Config{TimeToFirstToken: 10 * time.Millisecond, TimeToFirstTokenStdDev: 4 * time.Millisecond}); err == nil {
		t.Fatal("std-dev above 30% accepted")
	}
	if _, err := New(NameConstant, Config{TimeToFirstToken: 10 * time.Millisecond, TimeToFirstTokenStdDev: 3 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(NameConstant, Config{TimeFactorUnderLoad: 0.5}); err == nil {
		t.Fatal("factor below 1 accepted")
	}
	if _, err := New("nope", Config{}); err == nil {
		t.Fatal("unknown calculator accepted")
	}
}

// TestJitterDistribution: draws stay within [0.3, 1.7] x mean, centre on
// the mean and spread like the std-dev; the same Rand repeats the schedule.
func TestJitterDistribution(t *testing.T) {
	mean, sd := 10*time.Millisecond, 3*time.Millisecond
	c := mustNew(t, NameConstant, Config{TimeToFirstToken: mean, TimeToFirstTokenStdDev: sd, InterTokenLatency: mean, InterTokenLatencyStdDev: sd})
	var all []float64
	for i := uint64(0); i < 200; i++ {
		ttft, gaps, _ := c.Schedule(Input{OutputTokens: 50, RunningRequests: 1, MaxNumSeqs: 1, Rand: i}, nil)
		all = append(all, float64(ttft))
		for _, g := range gaps {
			all = append(all, float64(g))
		}
	}
	sort.Float64s(all)
	if all[0] < 0.3*float64(mean) || all[len(all)-1] > 1.7*float64(mean) {
		t.Fatalf("range [%v, %v] outside the clamp", time.Duration(all[0]), time.Duration(all[len(all)-1]))
	}
	median := all[len(all)/2]
	if median < 0.95*float64(mean) || median > 1.05*float64(mean) {
		t.Fatalf("median %v", time.Duration(median))
	}
	q16, q84 := all[len(all)*16/100], all[len(all)*84/100]
	if spread := (q84 - q16) / 2; spread < 0.8*float64(sd) || spread > 1.2*float64(sd) {
		t.Fatalf("spread %v, want about %v", time.Duration(spread), sd)
	}
	a, ga, _ := c.Schedule(Input{OutputTokens: 5, RunningRequests: 1, MaxNumSeqs: 1, Rand: 99}, nil)
	b, gb, _ := c.Schedule(Input{OutputTokens: 5, RunningRequests: 1, MaxNumSeqs: 1, Rand: 99}, nil)
	if a != b || ga[3] != gb[3] {
		t.Fatal("same Rand, different schedule")
	}
}

func TestScheduleReusesGaps(t *testing.T) {
	c := mustNew(t, NameConstant, Config{InterTokenLatency: time.Millisecond})
	buf := make([]time.Duration, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		_, buf, _ = c.Schedule(Input{OutputTokens: 32, RunningRequests: 1, MaxNumSeqs: 1}, buf)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per schedule", allocs)
	}
}
