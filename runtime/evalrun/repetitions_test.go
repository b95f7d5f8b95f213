package evalrun

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The p50 read off the counts is the p50 of the resample the counts describe, expanded.
func TestCountedMedianIsTheResamplesMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n := 1 + rng.IntN(40)
		values := make([]float64, n)
		var sorted []int32
		for i := range values {
			values[i] = math.Round(rng.Float64()*20) / 2 // ties on purpose
			if rng.IntN(5) == 0 {
				values[i] = math.NaN() // a request without this metric
				continue
			}
			sorted = append(sorted, int32(i))
		}
		slices.SortFunc(sorted, func(a, b int32) int { return cmpFloat(values[a], values[b]) })
		counts := make([]int32, n)
		var expanded []float64
		for range n {
			i := rng.IntN(n)
			counts[i]++
			if !math.IsNaN(values[i]) {
				expanded = append(expanded, values[i])
			}
		}
		got := countedMedian(sorted, values, counts)
		if len(expanded) == 0 {
			if !math.IsNaN(got) {
				t.Fatalf("trial %d: %v from no values", trial, got)
			}
			continue
		}
		slices.Sort(expanded)
		if want := Percentile(expanded, 50); math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: counted median %v, the resample's %v (%v)", trial, got, want, expanded)
		}
	}
}

// Replicates are reproducible from their seed and centred on the estimate.
func TestReplicatesAreSeededAndCentred(t *testing.T) {
	b := NewBuilder(nil)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 400 {
		ttft := 40 + rng.NormFloat64()*5
		b.Add(rec(i%50 != 0, float64(i)/100, float64(i)/100+0.2, ttft, 5, 10, 16), nil)
	}
	one, two := b.Replicates(100, 9), b.Replicates(100, 9)
	if !slices.Equal(one["ttft_ms"], two["ttft_ms"]) || len(one["ttft_ms"]) != 100 || len(one) != len(RepeatedMetrics) {
		t.Fatalf("replicates not reproducible or incomplete: %d metrics", len(one))
	}
	m := b.Metrics("")
	est, _ := m.Float("ttft_ms")
	sum := 0.0
	for _, v := range one["ttft_ms"] {
		sum += v
	}
	if mean := sum / 100; math.Abs(mean-est) > 1 {
		t.Errorf("replicates' mean TTFT %.2f, the estimate %.2f", mean, est)
	}
	errs := one["error_rate"]
	if slices.Min(errs) == slices.Max(errs) {
		t.Errorf("the error rate does not vary across resamples: %v", errs[:5])
	}
}
