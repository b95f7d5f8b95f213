package statetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/lensfn/lensfn/runtime/state"
)

// testHammerTransitions has many goroutines race through a chain of statuses: at each step
// exactly one of them may win.
func testHammerTransitions(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	const workers, steps = 12, 8
	mustCreate(t, s, state.Record{Kind: kind, ID: "h", Status: "s0", Attrs: map[string]string{"step": "0"}, Doc: []byte(`[]`)})
	for step := range steps {
		from, to := fmt.Sprintf("s%d", step), fmt.Sprintf("s%d", step+1)
		var wins sync.Map
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := state.Transition(ctx, s, kind, "h", state.TransitionSpec{
					From: []string{from}, To: to, MaxAttempts: 1000,
					Mutate: func(r *state.Record) error {
						r.Attrs["step"] = fmt.Sprint(step + 1)
						r.Doc = fmt.Appendf(nil, `{"winner":%d}`, w)
						return nil
					},
				})
				switch {
				case err == nil:
					wins.Store(w, true)
				case !errors.Is(err, state.ErrInvalidTransition):
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("step %d: unexpected error %v", step, err)
		}
		n := 0
		wins.Range(func(any, any) bool { n++; return true })
		if n != 1 {
			t.Fatalf("step %s->%s: %d winners, want exactly 1", from, to, n)
		}
	}
	r, _ := s.Get(ctx, kind, "h")
	if r.Status != fmt.Sprintf("s%d", steps) || r.Version != steps+1 {
		t.Errorf("final record %+v, want status s%d version %d", r, steps, steps+1)
	}
	counts, _ := s.Counts(ctx, kind)
	for st, n := range counts {
		if want := map[bool]int{true: 1, false: 0}[st == r.Status]; n != want {
			t.Errorf("count of %s = %d, want %d", st, n, want)
		}
	}
	facets, _ := s.Facets(ctx, kind, "step")
	if !slices.Equal(facets["step"], []string{fmt.Sprint(steps)}) {
		t.Errorf("step facet %v, want only the last step", facets["step"])
	}
}

// testHammerCreators creates records from many goroutines at once (same milliseconds) and
// checks no index entry is lost and every score is unique.
func testHammerCreators(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	const workers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := s.Create(ctx, state.Record{
					Kind: kind, ID: fmt.Sprintf("c%02d-%02d", w, i), Status: []string{"queued", "running"}[i%2],
					CreatedAt: base, Attrs: map[string]string{"worker": fmt.Sprintf("w%02d", w), "parity": fmt.Sprint(i % 2)},
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	p := list(t, s, state.Query{Kind: kind, Limit: state.MaxLimit})
	if p.Total != workers*each || len(p.Records) != workers*each {
		t.Fatalf("total %d, records %d, want %d", p.Total, len(p.Records), workers*each)
	}
	seen := map[string]bool{}
	for _, r := range p.Records {
		if seen[r.ID] {
			t.Fatalf("%s listed twice", r.ID)
		}
		seen[r.ID] = true
	}
	counts, _ := s.Counts(ctx, kind)
	if counts["queued"]+counts["running"] != workers*each {
		t.Errorf("counts %v", counts)
	}
	for w := range workers {
		q := state.Query{Kind: kind, Status: []string{"running"}, Attrs: map[string]string{"worker": fmt.Sprintf("w%02d", w), "parity": "1"}}
		if p := list(t, s, q); p.Total != each/2 {
			t.Errorf("worker w%02d running: total %d, want %d", w, p.Total, each/2)
		}
	}
	facets, _ := s.Facets(ctx, kind, "worker")
	if len(facets["worker"]) != workers {
		t.Errorf("worker facet has %d values, want %d", len(facets["worker"]), workers)
	}
}
