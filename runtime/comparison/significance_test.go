package comparison

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
)

// bootstrapOf runs reps repetitions of n requests through the runner's builders: TTFT and
// per-token time normal around ttft and tpot (ms), 16 output tokens, one failure in 50, and
// returns the run's bootstrap record.
func bootstrapOf(tb testing.TB, seed uint64, reps, n int, ttft, tpot float64) *evalrun.Bootstrap {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	b := &evalrun.Bootstrap{SchemaVersion: 1, Replicates: evalrun.BootstrapReplicates}
	clock := 0.0
	for r := range reps {
		samples := evalrun.NewSamples()
		builder := samples.NewBuilder(nil)
		for i := range n {
			first := max(1, ttft+rng.NormFloat64()*ttft/5)
			per := max(0.1, tpot+rng.NormFloat64()*tpot/5)
			latency := first + 15*per
			start := clock + float64(i)*0.01
			rec := loadgen.Record{Successful: rng.IntN(50) != 0, StartedAtSeconds: start, ScheduledAtSeconds: start,
				CompletedAtSeconds: start + latency/1000, LatencyMs: latency, TTFTMs: &first, TPOTMs: &per, InputTokens: 32, OutputTokens: 16,
				Metadata: map[string]any{"repetition": r}}
			samples.Add(rec, nil, builder)
		}
		clock += float64(n)*0.01 + 1
		b.Repetitions = append(b.Repetitions, evalrun.BootstrapOf(r, builder, builder.Metrics(""), seed+uint64(r)))
	}
	return b
}

func significanceOf(g, b *evalrun.Bootstrap) *Significance {
	r := Build([]Case{{ID: "g", Role: RoleGuide, BaselineCaseIDs: []string{"b"}, Bootstrap: g}, {ID: "b", Role: RoleBaseline, Bootstrap: b}}, true, time.Now())
	return r.Comparisons[0].Significance
}

// Two runs of the same configuration (their own noise, their own seeds) differ in no metric
// significantly; every metric has an interval that holds 1.
func TestIdenticalConfigurationsShowNoSignificantDifference(t *testing.T) {
	for seed := range uint64(10) {
		s := significanceOf(bootstrapOf(t, 100+seed, 3, 40, 40, 5), bootstrapOf(t, 200+seed, 3, 40, 40, 5))
		if s == nil || len(s.Metrics) != len(evalrun.RepeatedMetrics) || s.GuideRepetitions != 3 {
			t.Fatalf("significance %+v", s)
		}
		for _, e := range s.Metrics {
			m := e.Value
			if m.Verdict != VerdictNoSignificant {
				t.Errorf("seed %d: %s %s (ratio %v in [%v, %v])", seed, e.Key, m.Verdict, deref3(m.Ratio), deref3(m.RatioLow), deref3(m.RatioHigh))
			}
			if m.RatioLow != nil && (*m.RatioLow > 1 || *m.RatioHigh < 1) {
				t.Errorf("seed %d: %s interval [%v, %v] excludes 1", seed, e.Key, *m.RatioLow, *m.RatioHigh)
			}
		}
	}
}

// A guide whose TTFT is half the baseline's is better on TTFT and latency (lower is better), and
// the interval excludes 1.
func TestAClearDifferenceIsBetterOrWorse(t *testing.T) {
	g, b := bootstrapOf(t, 1, 3, 40, 20, 5), bootstrapOf(t, 2, 3, 40, 40, 5)
	s := significanceOf(g, b)
	ttft, _ := s.Metrics.Get("ttft_ms")
	if ttft.Verdict != VerdictBetter || *ttft.RatioHigh >= 1 || *ttft.Ratio > 0.6 || ttft.HigherIsBetter {
		t.Errorf("ttft %+v", ttft)
	}
	if l, _ := s.Metrics.Get("request_latency_ms"); l.Verdict != VerdictBetter || *l.RatioHigh >= 1 {
		t.Errorf("latency %v in [%v, %v]: %s", deref3(l.Ratio), deref3(l.RatioLow), deref3(l.RatioHigh), l.Verdict)
	}
	back := significanceOf(b, g)
	if ttft, _ := back.Metrics.Get("ttft_ms"); ttft.Verdict != VerdictWorse {
		t.Errorf("the other way round ttft is %s", ttft.Verdict)
	}
	// The same cases give the same intervals (seeded), and the report reads them back.
	if again := significanceOf(g, b); !reflect.DeepEqual(again, s) {
		t.Error("the intervals are not reproducible")
	}
	raw, _ := json.Marshal(s)
	var read Significance
	if err := json.Unmarshal(raw, &read); err != nil || !reflect.DeepEqual(&read, s) {
		t.Errorf("read back %v: %+v", err, read)
	}
}

// An error rate of 0 on both sides is no difference; without a baseline ratio there is no
// interval but the verdict still stands.
func TestZeroBaselineHasNoRatio(t *testing.T) {
	zero := func() *evalrun.Bootstrap {
		return &evalrun.Bootstrap{Repetitions: []evalrun.BootstrapRepetition{{Replicates: map[string][]float64{"error_rate": {0, 0, 0}}}}}
	}
	s := significanceOf(zero(), zero())
	e, ok := s.Metrics.Get("error_rate")
	if !ok || e.Verdict != VerdictNoSignificant || e.Ratio != nil {
		t.Errorf("error rate %+v", e)
	}
	if significanceOf(nil, zero()) != nil {
		t.Error("significance without the guide's bootstrap")
	}
}

// The guide's SLA verdict counts the repetitions that met each target.
func TestSLAVerdictCountsRepetitions(t *testing.T) {
	rep := func(ttft float64) evalrun.Metrics {
		return evalrun.Metrics{"latency_distributions": map[string]any{"ttft": map[string]any{"p99_ms": ttft}}}
	}
	r := Build([]Case{{ID: "g", Role: RoleGuide, SLATargets: map[string]any{"ttft_ms": 50.0},
		Metrics:     map[string]any{"latency_distributions": map[string]any{"ttft": map[string]any{"p99_ms": 45.0}}},
		Repetitions: []evalrun.Metrics{rep(40), rep(60), rep(45)}}}, true, time.Now())
	v := r.Comparisons[0].SLA
	c := v.Checks["ttft"]
	if *v.Met != true || *c.Margin != 5 || *c.MarginPercent != 10 || *c.RepetitionsMet != 2 || *c.Repetitions != 3 || *v.RepetitionsMet != 2 {
		t.Errorf("sla %+v ttft %+v", v, c)
	}
}

func deref3(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// BenchmarkSignificance is one comparison's intervals from two runs of 20 repetitions each.
func BenchmarkSignificance(b *testing.B) {
	g, base := bootstrapOf(b, 1, 20, 200, 40, 5), bootstrapOf(b, 2, 20, 200, 41, 5)
	for b.Loop() {
		significance(g, base, "g/b")
	}
}
