package limits

import (
	"strconv"
	"sync/atomic"
)

// InFlight is the memory budget of the requests a simulator is serving at once, counted as
// their bodies: a prompt is held from its body to the answer's last byte, and at long input
// lengths it dwarfs everything else a request holds (BENCHMARKS.md "In-flight memory budget").
// The per-request bounds above keep one request small; this keeps their sum small, whatever
// the concurrency.
type InFlight struct {
	budget int64
	held   atomic.Int64
}

// NewInFlight returns a budget of budget bytes.
func NewInFlight(budget int64) *InFlight { return &InFlight{budget: budget} }

// Acquire reserves n bytes, or reports false when they do not fit beside what is held.
func (f *InFlight) Acquire(n int64) bool {
	for {
		held := f.held.Load()
		if held+n > f.budget {
			return false
		}
		if f.held.CompareAndSwap(held, held+n) {
			return true
		}
	}
}

// Release returns n bytes Acquire reserved.
func (f *InFlight) Release(n int64) { f.held.Add(-n) }

// Held is what the requests being served hold now.
func (f *InFlight) Held() int64 { return f.held.Load() }

// Refusal is the message of a request that does not fit.
func (f *InFlight) Refusal(n int64) string {
	return "Service Unavailable: this request's " + strconv.FormatInt(n, 10) + "-byte body does not fit beside the " +
		strconv.FormatInt(f.held.Load()>>20, 10) + " MiB the requests in flight hold; the simulator's in-flight memory budget is " +
		strconv.FormatInt(f.budget>>20, 10) + " MiB (--max-inflight-request-mb). Retry when requests finish."
}
