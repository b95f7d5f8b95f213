package loadgen_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// promptsSent runs schedule with seed and returns each request's prompt, by request id.
func promptsSent(t *testing.T, seed uint64, api loadgen.API, schedule []loadgen.Request) map[string]string {
	t.Helper()
	fake := &fakeOpenAI{Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	cfg.Seed, cfg.API, cfg.RunID = seed, api, "r"
	run(t, cfg, schedule)
	out := map[string]string{}
	for _, r := range fake.requests() {
		var p string
		if api == loadgen.APIChat {
			p = r.Body["messages"].([]any)[0].(map[string]any)["content"].(string)
		} else {
			p = r.Body["prompt"].(string)
		}
		out[r.Header.Get("X-Request-ID")] = p
	}
	return out
}

func TestPromptsShareTextExactlyWhereHashIDsAreShared(t *testing.T) {
	const block = 16
	schedule := []loadgen.Request{
		{InputTokens: 3 * block, HashIDs: []int64{1, 2, 3}, BlockSize: block},
		{InputTokens: 3 * block, HashIDs: []int64{1, 2, 4}, BlockSize: block},
		{InputTokens: 2*block + 5, HashIDs: []int64{1, 2, 3}, BlockSize: block}, // short last block
		{InputTokens: 2 * block, HashIDs: []int64{9, 2}, BlockSize: block},
		{InputTokens: 40}, // no hash ids: fresh text
		{InputTokens: 40}, // and different fresh text
		{InputTokens: 3*block + 7, HashIDs: []int64{1, 2, 3}, BlockSize: block}, // longer than its blocks: tail
	}
	p := promptsSent(t, 11, loadgen.APICompletions, schedule)
	words := func(id string) []string { return strings.Fields(p[id]) }
	for id, want := range map[string]int{"r-1": 48, "r-2": 48, "r-3": 37, "r-4": 32, "r-5": 40, "r-6": 40, "r-7": 55} {
		if got := len(words(id)); got != want {
			t.Errorf("%s has %d words, want %d", id, got, want)
		}
	}
	prefix := func(a, b string) int {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	twoBlocks := len(strings.Join(words("r-1")[:2*block], " ")) + 1 // leading space
	if got := prefix(p["r-1"], p["r-2"]); got < twoBlocks || got >= len(p["r-1"]) {
		t.Errorf("ids 1,2,3 and 1,2,4 share %d bytes; want the first two blocks (%d) and no more", got, twoBlocks)
	}
	if !strings.HasPrefix(p["r-1"], p["r-3"]) {
		t.Error("a shorter last block is not a prefix of the same id's full block")
	}
	if !strings.HasPrefix(p["r-7"], p["r-1"]) {
		t.Error("a prompt longer than its blocks does not start with them")
	}
	if prefix(p["r-4"], p["r-1"]) > 10 {
		t.Error("different first ids share a prefix")
	}
	if block2 := strings.Join(words("r-1")[block:2*block], " "); !strings.Contains(p["r-4"], block2) {
		t.Error("block 2 is not the same text after a different first block")
	}
	if p["r-5"] == p["r-6"] {
		t.Error("rows without hash ids got the same text")
	}

	again := promptsSent(t, 11, loadgen.APICompletions, schedule)
	other := promptsSent(t, 12, loadgen.APICompletions, schedule)
	for id := range p {
		if again[id] != p[id] {
			t.Errorf("%s differs between runs with the same seed", id)
		}
		if other[id] == p[id] {
			t.Errorf("%s is the same under another seed", id)
		}
	}
}

func TestPromptBlocksSurviveCacheEviction(t *testing.T) {
	// A tiny cache evicts constantly; equal ids must still give equal text.
	fake := &fakeOpenAI{Tokens: 1}
	cfg := baseConfig(fake.start(t).URL)
	cfg.API, cfg.RunID, cfg.PromptCacheBytes = loadgen.APICompletions, "r", 200
	var schedule []loadgen.Request
	for i := 0; i < 30; i++ {
		schedule = append(schedule, loadgen.Request{InputTokens: 64, HashIDs: []int64{int64(i % 3), int64(100 + i)}, BlockSize: 32})
	}
	run(t, cfg, schedule)
	first := map[int]string{}
	for _, r := range fake.requests() {
		var i int
		if _, err := fmt.Sscanf(r.Header.Get("X-Request-ID"), "r-%d", &i); err != nil {
			t.Fatal(err)
		}
		head := strings.Join(strings.Fields(r.Body["prompt"].(string))[:32], " ")
		if prev, ok := first[(i-1)%3]; ok && prev != head {
			t.Fatalf("request %d: block %d text changed after eviction", i, (i-1)%3)
		}
		first[(i-1)%3] = head
	}
}
