package limits

import (
	"strings"
	"sync"
	"testing"
)

// TestInFlightHoldsAtMostTheBudget: racing acquirers never hold more than the budget together,
// and what they release is available again.
func TestInFlightHoldsAtMostTheBudget(t *testing.T) {
	f := NewInFlight(10 << 20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if f.Acquire(1 << 20) {
					mu.Lock()
					peak = max(peak, f.Held())
					mu.Unlock()
					f.Release(1 << 20)
				}
			}
		}()
	}
	wg.Wait()
	if peak > 10<<20 || f.Held() != 0 {
		t.Fatalf("peak %d, held after %d", peak, f.Held())
	}
	if !f.Acquire(10<<20) || f.Acquire(1) {
		t.Fatal("the whole budget is not exactly the budget")
	}
	if msg := f.Refusal(1); !strings.Contains(msg, "in-flight memory budget is 10 MiB (--max-inflight-request-mb)") {
		t.Fatal(msg)
	}
}
