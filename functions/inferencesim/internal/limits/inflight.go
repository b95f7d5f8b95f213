package limits

import (
	"strconv"
	"sync/atomic"
)

// InFlight is the memory budget of the requests a simulator is serving at once. A request
// costs BytesPerBodyByte times its body: the body is held from its decoding to the answer's
// last byte, and at long input lengths it and what is built from it dwarf everything else a
// request holds (BENCHMARKS.md "In-flight memory budget" measures up to about 4.5 bytes of
// peak RSS per body byte: token ids, copies and the garbage collector's headroom). The per-request bounds above keep one request small; this keeps their sum
// under the budget, whatever the concurrency.
type InFlight struct {
	budget int64
	held   atomic.Int64
}

// BytesPerBodyByte is what a request's body costs the budget per byte.
const BytesPerBodyByte = 6

// NewInFlight returns a budget of budget bytes.
func NewInFlight(budget int64) *InFlight { return &InFlight{budget: budget} }

// Acquire reserves what a request with a body of bodyBytes costs and returns it (for Release),
// or reports false when it does not fit beside what is held.
func (f *InFlight) Acquire(bodyBytes int64) (int64, bool) {
	n := bodyBytes * BytesPerBodyByte
	for {
		held := f.held.Load()
		if held+n > f.budget {
			return 0, false
		}
		if f.held.CompareAndSwap(held, held+n) {
			return n, true
		}
	}
}

// Release returns what Acquire reserved.
func (f *InFlight) Release(n int64) { f.held.Add(-n) }

// Held is what the requests being served hold now.
func (f *InFlight) Held() int64 { return f.held.Load() }

// Refusal is the message of a request with a body of bodyBytes that does not fit.
func (f *InFlight) Refusal(bodyBytes int64) string {
	return "Service Unavailable: this request (a " + strconv.FormatInt(bodyBytes, 10) + "-byte body, counted " + strconv.Itoa(BytesPerBodyByte) +
		" times) does not fit beside the " + strconv.FormatInt(f.held.Load()>>20, 10) +
		" MiB the requests in flight hold; the simulator's in-flight memory budget is " +
		strconv.FormatInt(f.budget>>20, 10) + " MiB (--max-inflight-request-mb). Retry when requests finish."
}
