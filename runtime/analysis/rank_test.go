package analysis

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectRanksMatchesSort: every selected index holds what a full sort puts there, on random,
// sorted, reversed and tie-heavy inputs of every small size and some large ones.
func TestSelectRanksMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(n int) []float64{
		"random":   func(n int) []float64 { return randomValues(rng, n, 1e6) },
		"ties":     func(n int) []float64 { return randomValues(rng, n, 3) },
		"sorted":   func(n int) []float64 { v := randomValues(rng, n, 1e6); slices.Sort(v); return v },
		"reversed": func(n int) []float64 { v := randomValues(rng, n, 1e6); slices.Sort(v); slices.Reverse(v); return v },
		"organ": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(min(i, n-i))
			}
			return v
		},
	}
	sizes := []int{1, 2, 3, 17, 100, 1000, 100_000}
	for n := range 40 {
		sizes = append(sizes, n+1)
	}
	for name, shape := range shapes {
		for _, n := range sizes {
			values := shape(n)
			sorted := slices.Sorted(slices.Values(values))
			ks := []int{0, rankIndex(n, 50), rankIndex(n, 90), rankIndex(n, 95), rankIndex(n, 99), n - 1}
			selectRanks(values, ks...)
			for _, k := range ks {
				if values[k] != sorted[k] {
					t.Fatalf("%s n=%d: index %d holds %v, sorted has %v", name, n, k, values[k], sorted[k])
				}
			}
			if !slices.Equal(slices.Sorted(slices.Values(values)), sorted) {
				t.Fatalf("%s n=%d: selection lost or changed values", name, n)
			}
		}
	}
}

func randomValues(rng *rand.Rand, n int, spread float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(int(rng.Float64() * spread))
	}
	return v
}

func TestRankIndex(t *testing.T) {
	for _, tc := range []struct{ n, p, want int }{
		{1, 50, 0}, {1, 99, 0}, {2, 50, 0}, {2, 90, 1}, {10, 90, 8}, {10, 91, 9},
		{100, 50, 49}, {100, 99, 98}, {100, 100, 99}, {101, 99, 99}, {1000, 95, 949},
	} {
		if got := rankIndex(tc.n, tc.p); got != tc.want {
			t.Errorf("rankIndex(%d, %d) = %d, want %d", tc.n, tc.p, got, tc.want)
		}
	}
}
