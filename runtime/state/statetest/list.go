package statetest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// fixture is the data set the listing tests compare against a brute-force reference.
func fixture(n int) []state.Record {
	statuses := []string{"queued", "running", "completed", "failed", "cancelled"}
	backends := []string{"trace-replayer", "aiperf"}
	models := []string{"Qwen/Qwen3-8B", "meta/llama-3", "mistral:7b"}
	datasets := []string{"mooncake-arxiv", "bailian", "burst", "weka", "baseten"}
	var out []state.Record
	for i := range n {
		attrs := map[string]string{
			"backend":      backends[i%len(backends)],
			"model":        models[(i/2)%len(models)],
			"dataset":      datasets[(i*7)%len(datasets)],
			"trace_format": fmt.Sprintf("fmt-%d", i%4),
		}
		if i%3 != 0 {
			attrs["endpoint"] = fmt.Sprintf("http://127.0.0.1:%d/v1", 38000+i%2)
		}
		out = append(out, state.Record{
			Kind: kind, ID: fmt.Sprintf("t%03d", i), Status: statuses[(i*3)%len(statuses)],
			// Non-monotonic creation times, some sharing a millisecond.
			CreatedAt: base.Add(time.Duration((i*37)%n/2) * time.Minute),
			Attrs:     attrs,
			Search:    fmt.Sprintf("Task %d %s", i, []string{"alpha", "beta", "gamma"}[i%3]),
			Doc:       []byte(fmt.Sprintf(`{"i":%d}`, i)),
		})
	}
	return out
}

// reference filters and orders records the way a Query is specified: newest first, ties in
// reverse creation order.
func reference(all []state.Record, q state.Query) []string {
	var hits []int
	for i, r := range all {
		if len(q.Status) > 0 && !slices.Contains(q.Status, r.Status) {
			continue
		}
		ok := true
		for k, v := range q.Attrs {
			if v != "" && r.Attrs[k] != v {
				ok = false
			}
		}
		if !ok || !strings.Contains(strings.ToLower(r.Search), strings.ToLower(q.Search)) {
			continue
		}
		c := r.CreatedAt.Truncate(time.Millisecond)
		if !q.CreatedAfter.IsZero() && c.Before(q.CreatedAfter.Truncate(time.Millisecond)) {
			continue
		}
		if !q.CreatedBefore.IsZero() && c.After(q.CreatedBefore.Truncate(time.Millisecond)) {
			continue
		}
		hits = append(hits, i)
	}
	sort.SliceStable(hits, func(a, b int) bool {
		ca, cb := all[hits[a]].CreatedAt, all[hits[b]].CreatedAt
		if !ca.Equal(cb) {
			return ca.After(cb)
		}
		return hits[a] > hits[b]
	})
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = all[h].ID
	}
	return out
}

func testListMatchesReference(t *testing.T, s state.Store) {
	all := fixture(90)
	for _, r := range all {
		mustCreate(t, s, r)
	}
	mid := base.Add(10 * time.Minute)
	queries := []struct {
		name string
		q    state.Query
	}{
		{"no filter", state.Query{}},
		{"one status", state.Query{Status: []string{"running"}}},
		{"two statuses", state.Query{Status: []string{"running", "failed"}}},
		{"one attr", state.Query{Attrs: map[string]string{"model": "mistral:7b"}}},
		{"status and attr", state.Query{Status: []string{"completed"}, Attrs: map[string]string{"backend": "aiperf"}}},
		{"two attrs", state.Query{Attrs: map[string]string{"backend": "trace-replayer", "dataset": "burst"}}},
		{"three filters", state.Query{Status: []string{"queued"}, Attrs: map[string]string{"backend": "aiperf", "model": "Qwen/Qwen3-8B"}}},
		{"statuses and attrs", state.Query{Status: []string{"queued", "cancelled"}, Attrs: map[string]string{"trace_format": "fmt-1", "endpoint": "http://127.0.0.1:38001/v1"}}},
		{"empty attr value ignored", state.Query{Attrs: map[string]string{"model": ""}}},
		{"unknown attr value", state.Query{Attrs: map[string]string{"model": "nope"}}},
		{"search", state.Query{Search: "GAMMA"}},
		{"search no hit", state.Query{Search: "delta"}},
		{"search and filter", state.Query{Search: "beta", Attrs: map[string]string{"backend": "aiperf"}}},
		{"created after", state.Query{CreatedAfter: mid}},
		{"created before", state.Query{CreatedBefore: mid}},
		{"created range", state.Query{CreatedAfter: base.Add(5 * time.Minute), CreatedBefore: base.Add(20 * time.Minute)}},
		{"created range exact", state.Query{CreatedAfter: base.Add(7 * time.Minute), CreatedBefore: base.Add(7 * time.Minute)}},
		{"everything", state.Query{Status: []string{"running", "completed", "failed"}, Attrs: map[string]string{"backend": "trace-replayer"},
			Search: "a", CreatedAfter: base.Add(3 * time.Minute), CreatedBefore: base.Add(40 * time.Minute)}},
	}
	for _, tc := range queries {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.Kind = kind
			want := reference(all, q)
			// Whole listing in one page.
			q.Limit = state.MaxLimit
			p := list(t, s, q)
			if !slices.Equal(ids(p.Records), want) || p.Total != len(want) {
				t.Fatalf("got %v (total %d), want %v (total %d)", ids(p.Records), p.Total, want, len(want))
			}
			// Offset paging reassembles the same listing with the same total on every page.
			var paged []string
			for off := 0; off < len(want)+7; off += 7 {
				q.Offset, q.Limit = off, 7
				p := list(t, s, q)
				if p.Total != len(want) {
					t.Fatalf("page at offset %d: total %d, want %d", off, p.Total, len(want))
				}
				paged = append(paged, ids(p.Records)...)
			}
			if !slices.Equal(paged, want) {
				t.Fatalf("paged %v, want %v", paged, want)
			}
		})
	}
	// A default limit applies when none is given.
	p := list(t, s, state.Query{Kind: kind})
	if len(p.Records) != state.DefaultLimit || p.Total != len(all) {
		t.Errorf("default page: %d records, total %d", len(p.Records), p.Total)
	}
	// Records of another kind stay apart.
	mustCreate(t, s, state.Record{Kind: "run", ID: "t000", Status: "running", Attrs: map[string]string{"model": "mistral:7b"}})
	if got := list(t, s, state.Query{Kind: "run"}); got.Total != 1 {
		t.Errorf("kind run total %d, want 1", got.Total)
	}
	if got := list(t, s, state.Query{Kind: kind, Limit: 1}); got.Total != len(all) {
		t.Errorf("kind task total %d after a run was added, want %d", got.Total, len(all))
	}
}

func testListSeesWrites(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	q := state.Query{Kind: kind, Status: []string{"queued"}, Attrs: map[string]string{"model": "m", "backend": "b"}, Limit: 2}
	attrs := map[string]string{"model": "m", "backend": "b"}
	for i := range 3 {
		mustCreate(t, s, state.Record{Kind: kind, ID: fmt.Sprintf("w%d", i), Status: "queued", CreatedAt: base.Add(time.Duration(i) * time.Second), Attrs: attrs})
	}
	if p := list(t, s, q); !slices.Equal(ids(p.Records), []string{"w2", "w1"}) || p.Total != 3 {
		t.Fatalf("first page %v total %d", ids(p.Records), p.Total)
	}
	mustCreate(t, s, state.Record{Kind: kind, ID: "w3", Status: "queued", CreatedAt: base.Add(3 * time.Second), Attrs: attrs})
	if p := list(t, s, q); !slices.Equal(ids(p.Records), []string{"w3", "w2"}) || p.Total != 4 {
		t.Fatalf("after create: %v total %d", ids(p.Records), p.Total)
	}
	r, _ := s.Get(ctx, kind, "w3")
	r.Status = "running"
	if _, err := s.Update(ctx, r, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := list(t, s, q); !slices.Equal(ids(p.Records), []string{"w2", "w1"}) || p.Total != 3 {
		t.Fatalf("after update: %v total %d", ids(p.Records), p.Total)
	}
	if err := s.Delete(ctx, kind, "w2", state.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	q.Offset = 1
	if p := list(t, s, q); !slices.Equal(ids(p.Records), []string{"w0"}) || p.Total != 2 {
		t.Fatalf("after delete, second page: %v total %d", ids(p.Records), p.Total)
	}

	// Search results follow changes of the search text, also when the first answer was empty.
	sq := state.Query{Kind: kind, Search: "needle", Attrs: map[string]string{"backend": "b"}}
	if p := list(t, s, sq); p.Total != 0 {
		t.Fatalf("search before any match: total %d", p.Total)
	}
	w0, _ := s.Get(ctx, kind, "w0")
	w0.Search = "has a Needle"
	if _, err := s.Update(ctx, w0, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := list(t, s, sq); !slices.Equal(ids(p.Records), []string{"w0"}) || p.Total != 1 {
		t.Fatalf("search after the text changed: %v total %d", ids(p.Records), p.Total)
	}
	mustCreate(t, s, state.Record{Kind: kind, ID: "w4", Status: "queued", CreatedAt: base.Add(4 * time.Second), Attrs: attrs, Search: "needle too"})
	if p := list(t, s, sq); !slices.Equal(ids(p.Records), []string{"w4", "w0"}) || p.Total != 2 {
		t.Fatalf("search after a matching create: %v total %d", ids(p.Records), p.Total)
	}
	w0, _ = s.Get(ctx, kind, "w0")
	w0.Search = "no longer"
	if _, err := s.Update(ctx, w0, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := list(t, s, sq); !slices.Equal(ids(p.Records), []string{"w4"}) || p.Total != 1 {
		t.Fatalf("search after the text stopped matching: %v total %d", ids(p.Records), p.Total)
	}
}

func testListSameMillisecond(t *testing.T, s state.Store) {
	for i := range 12 {
		mustCreate(t, s, state.Record{Kind: kind, ID: fmt.Sprintf("s%02d", i), Status: "queued", CreatedAt: base})
	}
	p := list(t, s, state.Query{Kind: kind, CreatedAfter: base, CreatedBefore: base})
	want := []string{"s11", "s10", "s09", "s08", "s07", "s06", "s05", "s04", "s03", "s02", "s01", "s00"}
	if !slices.Equal(ids(p.Records), want) {
		t.Errorf("same-millisecond order %v, want newest creation first %v", ids(p.Records), want)
	}
	if p := list(t, s, state.Query{Kind: kind, CreatedAfter: base.Add(time.Millisecond)}); p.Total != 0 {
		t.Errorf("created after the shared millisecond: total %d, want 0", p.Total)
	}
	if p := list(t, s, state.Query{Kind: kind, CreatedBefore: base.Add(-time.Millisecond)}); p.Total != 0 {
		t.Errorf("created before the shared millisecond: total %d, want 0", p.Total)
	}
}

func testCountsAndFacets(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	all := fixture(40)
	for _, r := range all {
		mustCreate(t, s, r)
	}
	wantCounts := map[string]int{}
	wantFacets := map[string][]string{}
	attrs := []string{"backend", "model", "dataset", "trace_format", "endpoint", "scenario"}
	for _, r := range all {
		wantCounts[r.Status]++
		for _, a := range attrs {
			if v := r.Attrs[a]; v != "" && !slices.Contains(wantFacets[a], v) {
				wantFacets[a] = append(wantFacets[a], v)
			}
		}
	}
	for _, a := range attrs {
		slices.Sort(wantFacets[a])
		if wantFacets[a] == nil {
			wantFacets[a] = []string{}
		}
	}
	counts, err := s.Counts(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(counts, wantCounts) {
		t.Errorf("counts %v, want %v", counts, wantCounts)
	}
	facets, err := s.Facets(ctx, kind, attrs...)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(facets, wantFacets, slices.Equal) {
		t.Errorf("facets %v, want %v", facets, wantFacets)
	}
	// Counts ignore list filters: listing with filters does not change them.
	list(t, s, state.Query{Kind: kind, Status: []string{"running"}, Attrs: map[string]string{"model": "meta/llama-3"}})
	if again, _ := s.Counts(ctx, kind); !maps.Equal(again, wantCounts) {
		t.Errorf("counts after a filtered list %v, want %v", again, wantCounts)
	}
	// Moving every aiperf record to another backend prunes the aiperf facet.
	for _, r := range all {
		if r.Attrs["backend"] != "aiperf" {
			continue
		}
		cur, _ := s.Get(ctx, kind, r.ID)
		cur.Attrs["backend"] = "trace-replayer"
		if _, err := s.Update(ctx, cur, state.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	facets, _ = s.Facets(ctx, kind, "backend")
	if !slices.Equal(facets["backend"], []string{"trace-replayer"}) {
		t.Errorf("backend facet after moving every aiperf record: %v", facets["backend"])
	}
	// An unused kind has no counts and empty facets.
	c, err := s.Counts(ctx, "workflow")
	if err != nil || len(c) != 0 {
		t.Errorf("counts of an empty kind = %v, %v", c, err)
	}
}
