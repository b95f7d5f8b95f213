package loadgen_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

func TestJSONLWriterWritesOneRecordPerLine(t *testing.T) {
	var buf bytes.Buffer
	w := loadgen.NewJSONLWriter(&buf)
	var wg sync.WaitGroup
	for i := 1; i <= 500; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := "HTTP 500: <boom> & \"quoted\"\nline"
			if err := w.Record(loadgen.Record{RequestID: int64(i), Error: &msg, Metadata: map[string]any{"k": i}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var r loadgen.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if r.Error == nil || *r.Error != "HTTP 500: <boom> & \"quoted\"\nline" || r.Metadata["k"] != float64(r.RequestID) {
			t.Fatalf("record %+v", r)
		}
		seen[r.RequestID] = true
	}
	if len(seen) != 500 || w.Count() != 500 {
		t.Fatalf("%d distinct records read back, %d counted", len(seen), w.Count())
	}
	if bytes.Contains(buf.Bytes(), []byte(`\u003c`)) {
		t.Error("HTML escaping makes the artifact harder to read")
	}
}

func TestJSONLWriterFlushesWhileRecordsKeepComing(t *testing.T) {
	var buf syncBuffer
	w := loadgen.NewJSONLWriter(&buf)
	w.FlushEvery = 20 * time.Millisecond
	if err := w.Record(loadgen.Record{RequestID: 1}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatal("flushed on the first small record; expected buffering")
	}
	time.Sleep(30 * time.Millisecond)
	if err := w.Record(loadgen.Record{RequestID: 2}); err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(buf.Bytes(), []byte("\n")); got != 2 {
		t.Fatalf("%d lines visible after FlushEvery passed, want 2", got)
	}
}

func TestRunStreamsRecordsToJSONL(t *testing.T) {
	fake := &fakeOpenAI{Tokens: 3}
	var buf bytes.Buffer
	w := loadgen.NewJSONLWriter(&buf)
	schedule := []loadgen.Request{{ArrivalMs: f64(0), OutputTokens: 3}, {ArrivalMs: f64(5), SessionID: "s", OutputTokens: 3}}
	if _, err := loadgen.Run(t.Context(), baseConfig(fake.start(t).URL), schedule, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"request_id", "status_code", "successful", "error", "scheduled_at_seconds", "started_at_seconds",
			"first_token_at_seconds", "completed_at_seconds", "latency_ms", "ttft_ms", "tpot_ms", "input_tokens", "output_tokens", "metadata"} {
			if _, ok := m[key]; !ok {
				t.Errorf("line lacks %s: %s", key, l)
			}
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuffer) Len() int { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.Len() }
func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}
