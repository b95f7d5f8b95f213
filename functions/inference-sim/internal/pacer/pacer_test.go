package pacer

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestPacerPrecision: 500 us steps against absolute deadlines land on
// time (median error well under the 1 ms an idle Go timer would add), and
// many concurrent waiters are all woken.
func TestPacerPrecision(t *testing.T) {
	p := New(false)
	// A loaded CI host can stall any single series; a Pacer that really wakes ~1 ms late (an
	// idle Go timer) fails every attempt, so the best of three is the honest measure.
	var medians []time.Duration
	for attempt := 0; attempt < 3; attempt++ {
		var errs []time.Duration
		start := Now()
		for i := 1; i <= 60; i++ {
			d := start + time.Duration(i)*500*time.Microsecond
			p.WaitUntil(d)
			errs = append(errs, Now()-d)
		}
		m := median(errs)
		if m < 0 {
			t.Fatalf("woken before the deadline: median %v", m)
		}
		if m <= 300*time.Microsecond {
			medians = nil
			break
		}
		medians = append(medians, m)
	}
	if medians != nil {
		t.Fatalf("median lateness %v in every attempt", medians)
	}
	var wg sync.WaitGroup
	base := Now() + 2*time.Millisecond
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := base + time.Duration(i%50)*100*time.Microsecond
			p.WaitUntil(d)
			if Now() < d {
				t.Error("woken early")
			}
		}()
	}
	wg.Wait()
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
