package engine

import (
	"errors"
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/kvcache"
)

// TestKVAccounting: a prompt pins its full blocks, the same prompt again finds them cached
// (in tokens), the usage gauge follows every pin and unpin, and a prompt that cannot fit
// beside the pinned blocks is refused with nothing pinned.
func TestKVAccounting(t *testing.T) {
	var gauge []float64
	kv := newKV(kvcache.New(4, 2, "", nil), nil, func(u float64) { gauge = append(gauge, u) })
	prompt := []uint32{1, 2, 3, 4, 5} // two full blocks of 2; the partial one is not cached

	first, cached, err := kv.Start(nil, "m", prompt, 0, "")
	if err != nil || cached != 0 || len(first) != 2 {
		t.Fatalf("first: blocks %d cached %d err %v, want 2 blocks, 0 cached", len(first), cached, err)
	}
	second, cached, err := kv.Start(nil, "m", prompt, 0, "")
	if err != nil || cached != 4 {
		t.Fatalf("second: cached %d err %v, want 4 tokens", cached, err)
	}
	if u := kv.Usage(); u != 0.5 {
		t.Fatalf("usage with two pinned blocks of 4: %v", u)
	}
	// Another model's prompt has other hashes: it needs 2 more blocks, and the 4-block
	// cache has exactly 2 free, so it fits; a third model's then cannot.
	other, cached, err := kv.Start(nil, "other", prompt, 0, "")
	if err != nil || cached != 0 {
		t.Fatalf("other model: cached %d err %v", cached, err)
	}
	refused, cached, err := kv.Start(make([]uint64, 0, 8), "third", prompt, 0, "")
	if !errors.Is(err, kvcache.ErrCacheFull) || cached != 0 || len(refused) != 0 {
		t.Fatalf("full cache: blocks %d cached %d err %v", len(refused), cached, err)
	}
	if u := kv.Usage(); u != 1 {
		t.Fatalf("usage after the refusal: %v, want 1 (nothing pinned by it)", u)
	}

	if rest := kv.Finish(first); len(rest) != 0 {
		t.Fatalf("Finish must return the emptied buffer, got %d", len(rest))
	}
	if u := kv.Usage(); u != 1 {
		t.Fatalf("blocks still pinned by the second request: usage %v", u)
	}
	kv.Finish(second)
	kv.Finish(other)
	if u := kv.Usage(); u != 0 {
		t.Fatalf("usage after every request finished: %v", u)
	}
	if n := len(gauge); n != 6 || gauge[n-1] != 0 || gauge[0] != 0.5 {
		t.Fatalf("gauge updates %v, want one per successful Start and Finish ending at 0", gauge)
	}
	// Unpinned blocks stay cached: the prompt hits again.
	if _, cached, _ := kv.Start(nil, "m", prompt, 0, ""); cached != 4 {
		t.Fatalf("after Finish: cached %d, want 4", cached)
	}
}

func TestOffsetPort(t *testing.T) {
	for in, want := range map[string]string{"tcp://h:5557": "tcp://h:5559", "tcp://[::1]:1": "tcp://[::1]:3"} {
		if got, err := offsetPort(in, 2); err != nil || got != want {
			t.Errorf("offsetPort(%q, 2) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"tcp://h", "tcp://h:", "5557"} {
		if _, err := offsetPort(bad, 1); err == nil {
			t.Errorf("offsetPort(%q) accepted an endpoint without a port", bad)
		}
	}
}
