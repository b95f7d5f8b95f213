package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// countingSchedule builds request i on demand (like a spooled trace) and counts the loads.
type countingSchedule struct {
	n       int
	session bool
	failAt  map[int]int // index -> the load (1-based) that fails

	mu    sync.Mutex
	loads map[int]int
}

func (s *countingSchedule) Len() int { return s.n }

func (s *countingSchedule) Load(i int, r *loadgen.Request) error {
	s.mu.Lock()
	if s.loads == nil {
		s.loads = map[int]int{}
	}
	s.loads[i]++
	k := s.loads[i]
	s.mu.Unlock()
	if s.failAt[i] == k {
		return errors.New("disk gone")
	}
	at := float64(i) // 1 ms apart
	*r = loadgen.Request{ArrivalMs: &at, InputTokens: 8, OutputTokens: 2, HashIDs: []int64{int64(i)}, BlockSize: 8,
		Metadata: map[string]any{"line": i + 1}}
	if s.session {
		*r = loadgen.Request{SessionID: fmt.Sprintf("s%d", i/3), Turn: i % 3, InputTokens: 8, OutputTokens: 2,
			ContextMode: loadgen.ContextDeltas}
	}
	return nil
}

// The engine holds no request between planning and sending: it reads each request to check and
// plan the run and again to send it, so a schedule on disk is all the memory the requests take.
func TestRunScheduleRereadsRequestsInsteadOfHoldingThem(t *testing.T) {
	fake := &fakeOpenAI{}
	url := fake.start(t).URL
	for _, sessions := range []bool{false, true} {
		t.Run(fmt.Sprintf("sessions=%v", sessions), func(t *testing.T) {
			sched := &countingSchedule{n: 30, session: sessions}
			sink := &memSink{}
			st, err := loadgen.RunSchedule(context.Background(), baseConfig(url), sched, sink)
			if err != nil {
				t.Fatal(err)
			}
			if st.Sent != 30 || st.Successful != 30 {
				t.Fatalf("stats %+v", st)
			}
			for i := 0; i < 30; i++ {
				want := 2
				if sessions {
					want = 3 // a schedule with sessions is read once more to link them
					if i%3 == 0 {
						want = 4 // and a session's first turn once more to order the sessions
					}
				}
				if got := sched.loads[i]; got != want {
					t.Errorf("request %d loaded %d times, want %d", i, got, want)
				}
			}
		})
	}
}

func TestRunScheduleLoadFailures(t *testing.T) {
	fake := &fakeOpenAI{}
	url := fake.start(t).URL
	// While planning: nothing is sent and the request is named.
	_, err := loadgen.RunSchedule(context.Background(), baseConfig(url), &countingSchedule{n: 5, failAt: map[int]int{3: 1}}, &memSink{})
	if err == nil || !strings.Contains(err.Error(), "request 4: disk gone") {
		t.Fatalf("err %v, want request 4's load failure", err)
	}
	if n := len(fake.requests()); n != 0 {
		t.Fatalf("%d requests sent after a failed plan", n)
	}
	// When the request is due: it is recorded as failed and the run goes on.
	sink := &memSink{}
	st, err := loadgen.RunSchedule(context.Background(), baseConfig(url), &countingSchedule{n: 5, failAt: map[int]int{2: 2}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if st.Successful != 4 || st.Failed != 1 {
		t.Fatalf("stats %+v, want 4 successful and 1 failed", st)
	}
	for _, r := range sink.byID() {
		if r.RequestID == 3 {
			if r.Error == nil || !strings.Contains(*r.Error, "loading the request from the schedule: disk gone") {
				t.Fatalf("request 3's record: %+v", r)
			}
		}
	}
	if n := len(fake.requests()); n != 4 {
		t.Fatalf("%d requests reached the server, want 4", n)
	}
}

// Requests listed out of time order are still sent by their arrivals.
func TestArrivalsOutOfIndexOrderAreSentInTimeOrder(t *testing.T) {
	fake := &fakeOpenAI{}
	url := fake.start(t).URL
	arrivals := []float64{60, 0, 30, 30}
	schedule := make([]loadgen.Request, len(arrivals))
	for i := range arrivals {
		schedule[i].ArrivalMs = &arrivals[i]
	}
	sink := &memSink{}
	if _, err := loadgen.Run(context.Background(), baseConfig(url), schedule, sink); err != nil {
		t.Fatal(err)
	}
	recs := sink.byID()
	for i, r := range recs {
		if want := arrivals[i] / 1000; r.ScheduledAtSeconds != want {
			t.Errorf("request %d scheduled at %vs, want its arrival %vs", r.RequestID, r.ScheduledAtSeconds, want)
		}
	}
	// 30 ms apart, the sends are in time order whatever the index order (requests 3 and 4 tie).
	for _, pair := range [][2]int{{1, 2}, {1, 3}, {2, 0}, {3, 0}} {
		a, b := recs[pair[0]], recs[pair[1]]
		if a.StartedAtSeconds >= b.StartedAtSeconds {
			t.Errorf("request %d started at %.4fs, not before request %d at %.4fs", a.RequestID, a.StartedAtSeconds, b.RequestID, b.StartedAtSeconds)
		}
	}
}
