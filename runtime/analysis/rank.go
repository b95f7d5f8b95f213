package analysis

import (
	"math/bits"
	"slices"
)

// rankIndex is the nearest-rank index ceil(n*p/100)-1, in integer arithmetic so that n*p/100
// landing on a whole number never rounds up by a float error.
func rankIndex(n, p int) int {
	return min(max((n*p+99)/100-1, 0), n-1)
}

// selectRanks reorders values so that values[k] holds the k-th smallest value for each of the
// ascending indexes ks, as a full sort would, in expected linear time: the summary needs four
// order statistics of a million latencies, not the whole order.
func selectRanks(values []float64, ks ...int) {
	done := 0 // values[:done] are all <= values[done:], so later ranks look only to the right
	for _, k := range ks {
		if k < done {
			continue
		}
		nthElement(values[done:], k-done)
		done = k + 1
	}
}

// nthElement is quickselect with a three-way partition (runs of equal latencies cost one pass)
// and a median-of-three pivot; past a depth budget it sorts, so the worst case stays n log n.
func nthElement(v []float64, k int) {
	lo, hi := 0, len(v)
	budget := 2*bits.Len(uint(len(v))) + 4
	for hi-lo > 16 {
		if budget == 0 {
			slices.Sort(v[lo:hi])
			return
		}
		budget--
		pivot := median3(v[lo], v[lo+(hi-lo)/2], v[hi-1])
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch x := v[i]; {
			case x < pivot:
				v[lt], v[i] = x, v[lt]
				lt++
				i++
			case x > pivot:
				gt--
				v[i], v[gt] = v[gt], x
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return // v[lt:gt] all equal the pivot, and k is among them
		}
	}
	slices.Sort(v[lo:hi])
}

func median3(a, b, c float64) float64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}
