package tracespool_test

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/lensfn/lensfn/runtime/tracespool"
	"github.com/lensfn/lensfn/wasm-modules/abi"
)

func f64(v float64) *float64 { return &v }

func sample(i int) abi.TraceRequest {
	r := abi.TraceRequest{Source: fmt.Sprintf("trace_%d.json", i%3), Line: int64(i + 1), SessionID: fmt.Sprintf("s%d", i/4),
		TurnIndex: i % 4, RecordedMs: float64(i) * 1.5, InputTokens: 100 + i, OutputTokens: i % 7,
		HashIDs: []int64{int64(i), int64(i + 1)}, BlockSize: 64, ContextMode: abi.ContextModeSelfContain}
	if i%4 == 0 {
		r.ArrivalMs = f64(float64(i))
	} else {
		r.DelayMs = f64(0.5)
	}
	if i%5 == 0 {
		r.Messages = []byte(`[{"role":"user","content":"hi"}]`)
		r.Subagent = &abi.SubagentLink{ParentSessionID: "s0", AgentID: "agent_001", SpawnAfterTurn: 1, JoinBeforeTurn: -1}
	}
	return r
}

// spoolOf spools records 0..n-1 made by record; the spool is closed when the test ends.
func spoolOf(t *testing.T, n int, record func(i int) abi.TraceRequest) *tracespool.Spool {
	t.Helper()
	w, err := tracespool.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := record(i)
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	s, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSpoolRoundTripsEveryFieldAndSource(t *testing.T) {
	const n = 50
	s := spoolOf(t, n, sample)
	if s.Len() != n {
		t.Fatalf("Len = %d, want %d", s.Len(), n)
	}
	for _, i := range []int{n - 1, 0, 17, 3, 17} { // any order, repeatedly
		var got abi.TraceRequest
		if err := s.Read(i, &got); err != nil {
			t.Fatal(err)
		}
		if want := sample(i); !reflect.DeepEqual(got, want) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	var r abi.TraceRequest
	if err := s.Read(n, &r); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("Read past the end: %v", err)
	}
}

func TestSpoolReadsConcurrently(t *testing.T) {
	s := spoolOf(t, 200, sample)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < 200; i += 8 {
				var r abi.TraceRequest
				if err := s.Read(i, &r); err != nil || r.InputTokens != 100+i || r.Source != sample(i).Source {
					t.Errorf("record %d: %+v, %v", i, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestCloseAndAbortRemoveTheFiles(t *testing.T) {
	dir := t.TempDir()
	w, _ := tracespool.Create(dir)
	r := sample(1)
	w.Append(&r)
	s, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	w2, _ := tracespool.Create(dir)
	w2.Append(&r)
	w2.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
	if _, err := w2.Finish(); err == nil {
		t.Fatal("Finish after Abort succeeded")
	}
}

// A million Mooncake-sized records cost the spool nothing per record: records and offsets are
// on disk.
func TestSpoolHoldsNoRecordInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~200 MB")
	}
	const n = 1_000_000
	hashes := make([]int64, 14)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := spoolOf(t, n, func(i int) abi.TraceRequest {
		arrival := float64(i)
		return abi.TraceRequest{Line: int64(i + 1), ArrivalMs: &arrival, RecordedMs: arrival, InputTokens: 7000, OutputTokens: 300,
			HashIDs: hashes, BlockSize: 512, ContextMode: abi.ContextModeDeltas}
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	perRecord := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	if perRecord > 1 {
		t.Fatalf("%.1f bytes of heap per spooled record, want none", perRecord)
	}
	var got abi.TraceRequest
	if err := s.Read(n-1, &got); err != nil || *got.ArrivalMs != n-1 {
		t.Fatalf("last record: %+v, %v", got, err)
	}
}
