package limits

import (
	"strings"
	"sync"
	"testing"
)

// TestInFlightHoldsAtMostTheBudget: racing acquirers never hold more than the budget together,
// and what they release is available again.
func TestInFlightHoldsAtMostTheBudget(t *testing.T) {
	f := NewInFlight(12 << 20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if n, ok := f.Acquire(256 << 10); ok {
					mu.Lock()
					peak = max(peak, f.Held())
					mu.Unlock()
					f.Release(n)
				}
			}
		}()
	}
	wg.Wait()
	if peak > 12<<20 || f.Held() != 0 {
		t.Fatalf("peak %d, held after %d", peak, f.Held())
	}
	if n, ok := f.Acquire(2 << 20); !ok || n != 12<<20 {
		t.Fatal("the whole budget is not exactly the budget")
	}
	if _, ok := f.Acquire(1); ok {
		t.Fatal("a byte over the budget was reserved")
	}
	if msg := f.Refusal(1); !strings.Contains(msg, "in-flight memory budget is 12 MiB (--max-inflight-request-mb)") {
		t.Fatal(msg)
	}
}
