package inferencesim

import (
	"sync"
	"testing"
	"time"
)

// TestPacerPrecision: 500 us steps against absolute deadlines land on
// time (median error well under the 1 ms an idle Go timer would add), and
// many concurrent waiters are all woken.
func TestPacerPrecision(t *testing.T) {
	p := newPacer(false)
	var errs []time.Duration
	start := monoNow()
	for i := 1; i <= 60; i++ {
		d := start + time.Duration(i)*500*time.Microsecond
		p.waitUntil(d)
		errs = append(errs, monoNow()-d)
	}
	if m := median(errs); m < 0 || m > 300*time.Microsecond {
		t.Fatalf("median lateness %v", m)
	}
	var wg sync.WaitGroup
	base := monoNow() + 2*time.Millisecond
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := base + time.Duration(i%50)*100*time.Microsecond
			p.waitUntil(d)
			if monoNow() < d {
				t.Error("woken early")
			}
		}()
	}
	wg.Wait()
}
