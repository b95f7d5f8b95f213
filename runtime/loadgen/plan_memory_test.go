package loadgen

import (
	"runtime"
	"testing"
)

// syntheticSchedule makes a Mooncake-sized request on every load and keeps nothing.
type syntheticSchedule struct{ n int }

func (s syntheticSchedule) Len() int { return s.n }

func (s syntheticSchedule) Load(i int, r *Request) error {
	at := float64(i)
	*r = Request{ArrivalMs: &at, InputTokens: 7000, OutputTokens: 300, HashIDs: make([]int64, 14), BlockSize: 512,
		Metadata: map[string]any{"line": i + 1}}
	return nil
}

// The plan of a million-request schedule costs a few bytes per request (the turn chain and
// the release order), never the requests: a trace on disk stays on disk.
func TestPlanHoldsAFewBytesPerRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a million requests")
	}
	const n = 1_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := newPlan(syntheticSchedule{n: n}, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perRequest := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("plan: %.1f bytes per request", perRequest)
	if perRequest > 32 {
		t.Fatalf("the plan holds %.1f bytes per request, want <= 32", perRequest)
	}
	if len(p.heads) != n || p.next[n-1] != -1 {
		t.Fatalf("plan of %d heads", len(p.heads))
	}
	runtime.KeepAlive(p)
}
