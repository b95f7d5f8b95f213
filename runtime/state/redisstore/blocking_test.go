package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// TestBlockingReadsLeaveThePoolToOthers: many more waiting progress readers (open event
// streams) than the pool has connections do not slow other operations, and each reader still
// sees an entry appended while it waits, within its wait.
func TestBlockingReadsLeaveThePoolToOthers(t *testing.T) {
	s := openStore(t, redisstore.Options{PoolSize: 4})
	ctx := context.Background()
	if _, err := s.Create(ctx, state.Record{Kind: "task", ID: "busy", Status: "queued", Doc: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	const readers = 32
	got := make(chan int, readers)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entries, err := s.ReadProgress(ctx, "task", "busy", "", 10, 3*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- len(entries)
		}()
	}
	time.Sleep(300 * time.Millisecond) // every reader is waiting
	for i := range 10 {
		start := time.Now()
		if _, err := s.Get(ctx, "task", "busy"); err != nil {
			t.Fatalf("get %d beside %d waiting readers: %v", i, readers, err)
		}
		if took := time.Since(start); took > 200*time.Millisecond {
			t.Fatalf("get %d took %v beside %d waiting readers on a pool of 4", i, took, readers)
		}
	}
	appended := time.Now()
	if _, err := s.AppendProgress(ctx, "task", "busy", map[string]string{"type": "log", "line": "hi"}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(got)
	for n := range got {
		if n != 1 {
			t.Fatalf("a reader got %d entries, want the appended one", n)
		}
	}
	if took := time.Since(appended); took > time.Second {
		t.Fatalf("the readers saw the entry %v after it was appended", took)
	}
}
