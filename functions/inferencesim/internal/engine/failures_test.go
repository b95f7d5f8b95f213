package engine

import (
	"testing"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/wasm-modules/splitmix"
)

// TestInjectFailure: rate 0 never fails, 100 always does with one of the listed types,
// a seed reproduces the pattern, and about rate % of requests fail.
func TestInjectFailure(t *testing.T) {
	rg := splitmix.New(1)
	for i := 0; i < 100; i++ {
		if e := InjectFailure(&rg, 0, nil, "m"); e != nil {
			t.Fatalf("rate 0 failed a request: %v", e)
		}
	}
	for i := 0; i < 100; i++ {
		e := InjectFailure(&rg, 100, []string{config.FailureRateLimit}, "m")
		if e == nil || e.Status != 429 {
			t.Fatalf("rate 100 with rate_limit only: %v", e)
		}
	}
	pattern := func(seed uint64) (failed int, statuses []int) {
		rg := splitmix.New(seed)
		for i := 0; i < 1000; i++ {
			if e := InjectFailure(&rg, 30, nil, "m"); e != nil {
				failed++
				statuses = append(statuses, e.Status)
			}
		}
		return failed, statuses
	}
	n1, s1 := pattern(7)
	n2, s2 := pattern(7)
	if n1 != n2 || len(s1) != len(s2) {
		t.Fatalf("one seed, two patterns: %d vs %d failures", n1, n2)
	}
	for i := range s1 {
		if s1[i] != s2[i] {
			t.Fatalf("one seed, two patterns at failure %d", i)
		}
	}
	if n1 < 240 || n1 > 360 {
		t.Fatalf("%d of 1000 failed at rate 30 %%", n1)
	}
	seen := map[int]bool{}
	for _, s := range s1 {
		seen[s] = true
	}
	for _, want := range []int{400, 401, 404, 429, 503} {
		if !seen[want] {
			t.Errorf("no failure with status %d among all types", want)
		}
	}
}
