package statetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

func testProgress(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	var idsSeen []string
	for i := range 5 {
		id, err := s.AppendProgress(ctx, kind, "p", map[string]string{"pct": fmt.Sprint(i * 20), "msg": "step"})
		if err != nil {
			t.Fatal(err)
		}
		idsSeen = append(idsSeen, id)
	}
	all, err := s.ReadProgress(ctx, kind, "p", "", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("read %d entries, want 5", len(all))
	}
	for i, e := range all {
		if e.ID != idsSeen[i] || e.Fields["pct"] != fmt.Sprint(i*20) || e.Fields["msg"] != "step" {
			t.Errorf("entry %d = %+v", i, e)
		}
	}
	tail, err := s.ReadProgress(ctx, kind, "p", idsSeen[2], 100, 0)
	if err != nil || len(tail) != 2 || tail[0].ID != idsSeen[3] {
		t.Errorf("read after %s: %+v, %v", idsSeen[2], tail, err)
	}
	two, _ := s.ReadProgress(ctx, kind, "p", "", 2, 0)
	if len(two) != 2 || two[1].ID != idsSeen[1] {
		t.Errorf("count 2: %+v", two)
	}
	none, err := s.ReadProgress(ctx, kind, "p", idsSeen[4], 10, 0)
	if err != nil || len(none) != 0 {
		t.Errorf("read at the end: %+v, %v", none, err)
	}
	if _, err := s.AppendProgress(ctx, kind, "p", nil); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("empty entry: %v", err)
	}
}

func testProgressBlockingRead(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	last, err := s.AppendProgress(ctx, kind, "b", map[string]string{"pct": "0"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := s.ReadProgress(ctx, kind, "b", last, 10, 100*time.Millisecond)
	if err != nil || len(got) != 0 {
		t.Fatalf("blocking read with nothing new: %+v, %v", got, err)
	}
	if waited := time.Since(start); waited < 80*time.Millisecond {
		t.Errorf("blocking read returned after %s, want about 100ms", waited)
	}
	appended := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, err := s.AppendProgress(ctx, kind, "b", map[string]string{"pct": "50"})
		appended <- err
	}()
	got, err = s.ReadProgress(ctx, kind, "b", last, 10, 5*time.Second)
	if appendErr := <-appended; appendErr != nil {
		t.Fatal(appendErr)
	}
	if err != nil || len(got) != 1 || got[0].Fields["pct"] != "50" {
		t.Fatalf("blocking read woken by an append: %+v, %v", got, err)
	}
}

func testLogCap(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	if err := s.AppendLogs(ctx, kind, "small", "one", "two"); err != nil {
		t.Fatal(err)
	}
	small, err := s.ReadLogs(ctx, kind, "small")
	if err != nil || !slices.Equal(small.Lines, []string{"one", "two"}) || small.Truncated() {
		t.Errorf("small log %+v, %v", small, err)
	}
	// 1250 lines in chunks of various sizes, two of them larger than the cap.
	var all []string
	for i := range 1250 {
		all = append(all, fmt.Sprintf("line %d", i))
	}
	for _, chunk := range [][2]int{{0, 100}, {100, 101}, {101, 700}, {700, 1250}} {
		if err := s.AppendLogs(ctx, kind, "big", all[chunk[0]:chunk[1]]...); err != nil {
			t.Fatal(err)
		}
	}
	big, err := s.ReadLogs(ctx, kind, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(big.Lines) != 500 || big.Lines[0] != "line 750" || big.Lines[499] != "line 1249" {
		t.Errorf("kept %d lines from %q to %q", len(big.Lines), big.Lines[0], big.Lines[len(big.Lines)-1])
	}
	if big.Dropped != 750 || !big.Truncated() {
		t.Errorf("dropped %d, want 750", big.Dropped)
	}
	empty, err := s.ReadLogs(ctx, kind, "none")
	if err != nil || len(empty.Lines) != 0 || empty.Truncated() {
		t.Errorf("missing log %+v, %v", empty, err)
	}
}
