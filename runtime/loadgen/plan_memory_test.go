package loadgen

import (
	"fmt"
	"runtime"
	"testing"
)

// syntheticSchedule makes a Mooncake-sized request on every load and keeps nothing; with
// sessions, every three requests are the turns of one session.
type syntheticSchedule struct {
	n        int
	sessions bool
}

func (s syntheticSchedule) Len() int { return s.n }

func (s syntheticSchedule) Load(i int, r *Request) error {
	at := float64(i)
	*r = Request{ArrivalMs: &at, InputTokens: 7000, OutputTokens: 300, HashIDs: make([]int64, 14), BlockSize: 512,
		Metadata: map[string]any{"line": i + 1}}
	if s.sessions {
		r.SessionID, r.Turn = fmt.Sprintf("s%d", i/3), i%3
	}
	return nil
}

// Planning a million-request schedule never holds the requests: a schedule without sessions
// (the common trace) costs nothing per request, one with sessions its turn chains and heads.
func TestPlanHoldsAFewBytesPerRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a million requests")
	}
	const n = 1_000_000
	for _, tt := range []struct {
		sessions bool
		max      float64
	}{{false, 0.1}, {true, 8}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p, err := newPlan(syntheticSchedule{n: n, sessions: tt.sessions}, APIChat)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perRequest := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		t.Logf("sessions=%v: the plan holds %.2f bytes per request", tt.sessions, perRequest)
		if perRequest > tt.max {
			t.Errorf("sessions=%v: the plan holds %.2f bytes per request, want <= %v", tt.sessions, perRequest, tt.max)
		}
		wantHeads := n
		if tt.sessions {
			wantHeads = (n + 2) / 3
		}
		if p.headCount() != wantHeads || p.nextTurn(n-1) != -1 {
			t.Fatalf("sessions=%v: %d heads", tt.sessions, p.headCount())
		}
		runtime.KeepAlive(p)
	}
}
