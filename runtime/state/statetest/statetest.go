package statetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// NewStore returns an empty store for one test and arranges its cleanup with t.Cleanup.
// Stores returned for different tests must not see each other's data.
type NewStore func(t *testing.T) state.Store

// Run runs the whole suite against stores made by newStore.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s state.Store)
	}{
		{"CreateGet", testCreateGet},
		{"InvalidInput", testInvalidInput},
		{"UpdateMovesIndexes", testUpdateMovesIndexes},
		{"VersionConflict", testVersionConflict},
		{"DeleteRemovesEverything", testDeleteRemovesEverything},
		{"ListMatchesReference", testListMatchesReference},
		{"ListSeesWritesBetweenPages", testListSeesWrites},
		{"ListSameMillisecondOrder", testListSameMillisecond},
		{"CountsAndFacets", testCountsAndFacets},
		{"Transition", testTransition},
		{"Leases", testLeases},
		{"LeaseExpiryAndFencing", testLeaseExpiryAndFencing},
		{"Claims", testClaims},
		{"ClaimExpiry", testClaimExpiry},
		{"ClaimTakeover", testClaimTakeover},
		{"Progress", testProgress},
		{"ProgressBlockingRead", testProgressBlockingRead},
		{"LogCap", testLogCap},
		{"Counters", testCounters},
		{"HammerTransitions", testHammerTransitions},
		{"HammerCreators", testHammerCreators},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each test has its own store; the waits of expiry tests overlap
			tc.fn(t, newStore(t))
		})
	}
}

const kind = "task"

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var base = time.Date(2026, 9, 23, 9, 18, 24, 287_000_000, time.UTC)

func mustCreate(t *testing.T, s state.Store, r state.Record) state.Record {
	t.Helper()
	out, err := s.Create(ctxT(t), r)
	if err != nil {
		t.Fatalf("Create(%s %s): %v", r.Kind, r.ID, err)
	}
	return out
}

func ids(records []state.Record) []string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = r.ID
	}
	return out
}

func list(t *testing.T, s state.Store, q state.Query) state.Page {
	t.Helper()
	p, err := s.List(ctxT(t), q)
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return p
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func testCreateGet(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	in := state.Record{
		Kind: kind, ID: "1a2b3c4d", Status: "queued",
		CreatedAt: base.Add(123456 * time.Nanosecond), // below millisecond precision
		Attrs:     map[string]string{"backend": "trace-replayer", "model": "Qwen/Qwen3-8B", "endpoint": "", "dataset": "mooncake-arxiv"},
		Search:    "Trace Simulation Qwen",
		Doc:       []byte(`{"id":"1a2b3c4d","name":"Trace simulation"}`),
	}
	created, err := s.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if created.Version != 1 {
		t.Errorf("created version = %d, want 1", created.Version)
	}
	got, err := s.Get(ctx, kind, "1a2b3c4d")
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != kind || got.ID != "1a2b3c4d" || got.Status != "queued" || got.Version != 1 {
		t.Errorf("Get = %+v", got)
	}
	if !got.CreatedAt.Equal(base) {
		t.Errorf("CreatedAt = %s, want %s (millisecond precision)", got.CreatedAt, base)
	}
	if got.UpdatedAt.IsZero() {
		t.Error("UpdatedAt not set")
	}
	wantAttrs := map[string]string{"backend": "trace-replayer", "model": "Qwen/Qwen3-8B", "dataset": "mooncake-arxiv"}
	if !maps.Equal(got.Attrs, wantAttrs) {
		t.Errorf("Attrs = %v, want %v (empty values dropped)", got.Attrs, wantAttrs)
	}
	if got.Search != "trace simulation qwen" {
		t.Errorf("Search = %q, want lower-cased", got.Search)
	}
	if string(got.Doc) != string(in.Doc) {
		t.Errorf("Doc = %s", got.Doc)
	}
	if !created.CreatedAt.Equal(got.CreatedAt) || created.Search != got.Search {
		t.Errorf("Create returned %+v, Get returned %+v", created, got)
	}
	_, err = s.Create(ctx, in)
	wantErr(t, "second Create", err, state.ErrExists)
	_, err = s.Get(ctx, kind, "missing")
	wantErr(t, "Get missing", err, state.ErrNotFound)
	_, err = s.Get(ctx, "run", "1a2b3c4d")
	wantErr(t, "Get other kind", err, state.ErrNotFound)

	// Zero CreatedAt means now.
	before := time.Now().Add(-time.Second)
	now := mustCreate(t, s, state.Record{Kind: kind, ID: "now", Status: "queued"})
	if now.CreatedAt.Before(before) || now.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("zero CreatedAt became %s, want about now", now.CreatedAt)
	}
}

func testInvalidInput(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	bad := []struct {
		name string
		rec  state.Record
	}{
		{"empty kind", state.Record{ID: "a", Status: "queued"}},
		{"kind with colon", state.Record{Kind: "ta:sk", ID: "a", Status: "queued"}},
		{"empty id", state.Record{Kind: kind, Status: "queued"}},
		{"id with colon", state.Record{Kind: kind, ID: "a:b", Status: "queued"}},
		{"empty status", state.Record{Kind: kind, ID: "a"}},
		{"upper-case attr name", state.Record{Kind: kind, ID: "a", Status: "queued", Attrs: map[string]string{"Model": "x"}}},
		{"doc not JSON", state.Record{Kind: kind, ID: "a", Status: "queued", Doc: []byte("{nope")}},
		{"created before 1970", state.Record{Kind: kind, ID: "a", Status: "queued", CreatedAt: time.Unix(-10, 0)}},
		{"created too late for exact scores", state.Record{Kind: kind, ID: "a", Status: "queued", CreatedAt: state.MaxCreatedAt}},
	}
	for _, b := range bad {
		_, err := s.Create(ctx, b.rec)
		wantErr(t, "Create "+b.name, err, state.ErrInvalid)
	}
	badQueries := []state.Query{
		{},
		{Kind: kind, Limit: -1},
		{Kind: kind, Limit: state.MaxLimit + 1},
		{Kind: kind, Offset: -1},
		{Kind: kind, Status: []string{"Bad Status"}},
		{Kind: kind, CreatedAfter: base, CreatedBefore: base.Add(-time.Second)},
	}
	for _, q := range badQueries {
		_, err := s.List(ctx, q)
		wantErr(t, fmt.Sprintf("List(%+v)", q), err, state.ErrInvalid)
	}
	mustCreate(t, s, state.Record{Kind: kind, ID: "a", Status: "queued"})
	_, err := s.Update(ctx, state.Record{Kind: kind, ID: "a", Status: "running"}, state.UpdateOptions{})
	wantErr(t, "Update without version", err, state.ErrInvalid)
	_, err = s.AcquireLease(ctx, "", "me", time.Second)
	wantErr(t, "AcquireLease empty name", err, state.ErrInvalid)
	_, err = s.AcquireLease(ctx, "x", "me", 0)
	wantErr(t, "AcquireLease zero ttl", err, state.ErrInvalid)
	_, err = s.Claim(ctx, "", claimant, time.Second)
	wantErr(t, "Claim empty key", err, state.ErrInvalid)
	_, err = s.ReadProgress(ctx, kind, "a", "", 0, 0)
	wantErr(t, "ReadProgress zero count", err, state.ErrInvalid)
}

func testUpdateMovesIndexes(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	r := mustCreate(t, s, state.Record{Kind: kind, ID: "t1", Status: "queued", CreatedAt: base,
		Attrs: map[string]string{"model": "m-a", "backend": "b-x"}, Search: "first"})
	mustCreate(t, s, state.Record{Kind: kind, ID: "t2", Status: "queued", CreatedAt: base.Add(time.Second),
		Attrs: map[string]string{"model": "m-a"}})

	r.Status = "running"
	r.Attrs = map[string]string{"model": "m-b", "dataset": "d-1"} // backend dropped, model changed, dataset added
	r.Search = "Second"
	r.Doc = []byte(`{"progress":1}`)
	r.CreatedAt = base.Add(time.Hour) // immutable: ignored
	up, err := s.Update(ctx, r, state.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if up.Version != 2 {
		t.Errorf("version after update = %d, want 2", up.Version)
	}
	got, err := s.Get(ctx, kind, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "running" || got.Version != 2 || !got.CreatedAt.Equal(base) || got.Search != "second" ||
		string(got.Doc) != `{"progress":1}` || !maps.Equal(got.Attrs, map[string]string{"model": "m-b", "dataset": "d-1"}) {
		t.Errorf("after update Get = %+v", got)
	}

	check := func(name string, q state.Query, want ...string) {
		t.Helper()
		q.Kind = kind
		p := list(t, s, q)
		if !slices.Equal(ids(p.Records), want) || p.Total != len(want) {
			t.Errorf("%s: got %v total %d, want %v", name, ids(p.Records), p.Total, want)
		}
	}
	check("queued", state.Query{Status: []string{"queued"}}, "t2")
	check("running", state.Query{Status: []string{"running"}}, "t1")
	check("old model", state.Query{Attrs: map[string]string{"model": "m-a"}}, "t2")
	check("new model", state.Query{Attrs: map[string]string{"model": "m-b"}}, "t1")
	check("dropped backend", state.Query{Attrs: map[string]string{"backend": "b-x"}})
	check("new dataset", state.Query{Attrs: map[string]string{"dataset": "d-1"}}, "t1")
	check("old model + queued", state.Query{Status: []string{"queued"}, Attrs: map[string]string{"model": "m-a"}}, "t2")
	check("new model + running", state.Query{Status: []string{"running"}, Attrs: map[string]string{"model": "m-b", "dataset": "d-1"}}, "t1")
	check("old search", state.Query{Search: "first"})
	check("new search", state.Query{Search: "SECOND"}, "t1")
	check("all, created time kept", state.Query{}, "t2", "t1")
	facets, err := s.Facets(ctx, kind, "model", "backend", "dataset")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"model": {"m-a", "m-b"}, "backend": {}, "dataset": {"d-1"}}
	if !maps.EqualFunc(facets, want, slices.Equal) {
		t.Errorf("facets = %v, want %v", facets, want)
	}
	counts, err := s.Counts(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}
	if counts["queued"] != 1 || counts["running"] != 1 {
		t.Errorf("counts = %v", counts)
	}
	// A doc-only update keeps memberships.
	up.Doc = []byte(`{"progress":2}`)
	if _, err := s.Update(ctx, up, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("running after doc update", state.Query{Status: []string{"running"}, Attrs: map[string]string{"model": "m-b"}}, "t1")
}

func testVersionConflict(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	r := mustCreate(t, s, state.Record{Kind: kind, ID: "v", Status: "queued", Attrs: map[string]string{"model": "a"}})
	first := r.Clone()
	first.Attrs["model"] = "b"
	if _, err := s.Update(ctx, first, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := r.Clone()
	stale.Attrs["model"] = "c"
	_, err := s.Update(ctx, stale, state.UpdateOptions{})
	wantErr(t, "stale update", err, state.ErrVersionConflict)
	got, _ := s.Get(ctx, kind, "v")
	if got.Attrs["model"] != "b" || got.Version != 2 {
		t.Errorf("stale update changed the record: %+v", got)
	}
	p := list(t, s, state.Query{Kind: kind, Attrs: map[string]string{"model": "c"}})
	if p.Total != 0 {
		t.Errorf("stale update left an index entry: %v", ids(p.Records))
	}
	_, err = s.Update(ctx, state.Record{Kind: kind, ID: "missing", Status: "queued", Version: 1}, state.UpdateOptions{})
	wantErr(t, "update missing", err, state.ErrNotFound)
	err = s.Delete(ctx, kind, "v", state.DeleteOptions{Version: 1})
	wantErr(t, "delete at stale version", err, state.ErrVersionConflict)
	if _, err := s.Get(ctx, kind, "v"); err != nil {
		t.Errorf("conditional delete at a stale version removed the record: %v", err)
	}
}

func testDeleteRemovesEverything(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	mustCreate(t, s, state.Record{Kind: kind, ID: "keep", Status: "completed", CreatedAt: base,
		Attrs: map[string]string{"model": "shared"}, Search: "keep"})
	gone := mustCreate(t, s, state.Record{Kind: kind, ID: "gone", Status: "failed", CreatedAt: base.Add(time.Second),
		Attrs: map[string]string{"model": "shared", "backend": "only-gone"}, Search: "gone"})
	if _, err := s.AppendProgress(ctx, kind, "gone", map[string]string{"pct": "10"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLogs(ctx, kind, "gone", "line"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, kind, "gone", state.DeleteOptions{Version: gone.Version}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, kind, "gone")
	wantErr(t, "Get deleted", err, state.ErrNotFound)
	err = s.Delete(ctx, kind, "gone", state.DeleteOptions{})
	wantErr(t, "Delete twice", err, state.ErrNotFound)

	for _, q := range []state.Query{
		{}, {Status: []string{"failed"}}, {Attrs: map[string]string{"backend": "only-gone"}},
		{Attrs: map[string]string{"model": "shared"}}, {Search: "gone"},
		{Status: []string{"failed", "completed"}, Attrs: map[string]string{"model": "shared"}},
	} {
		q.Kind = kind
		p := list(t, s, q)
		for _, r := range p.Records {
			if r.ID == "gone" {
				t.Errorf("List(%+v) still returns the deleted record", q)
			}
		}
		if p.Total != len(p.Records) {
			t.Errorf("List(%+v): total %d for %d records (dangling index entry?)", q, p.Total, len(p.Records))
		}
	}
	counts, _ := s.Counts(ctx, kind)
	if counts["failed"] != 0 || counts["completed"] != 1 {
		t.Errorf("counts after delete = %v", counts)
	}
	facets, _ := s.Facets(ctx, kind, "backend", "model")
	if len(facets["backend"]) != 0 || !slices.Equal(facets["model"], []string{"shared"}) {
		t.Errorf("facets after delete = %v, want backend pruned and model kept", facets)
	}
	entries, err := s.ReadProgress(ctx, kind, "gone", "", 10, 0)
	if err != nil || len(entries) != 0 {
		t.Errorf("progress after delete = %v, %v", entries, err)
	}
	logs, err := s.ReadLogs(ctx, kind, "gone")
	if err != nil || len(logs.Lines) != 0 {
		t.Errorf("logs after delete = %v, %v", logs, err)
	}
	// The id can be reused.
	mustCreate(t, s, state.Record{Kind: kind, ID: "gone", Status: "queued"})
}

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

func testTransition(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	mustCreate(t, s, state.Record{Kind: kind, ID: "x", Status: "queued", Doc: []byte(`{"n":0}`)})
	got, err := state.Transition(ctx, s, kind, "x", state.TransitionSpec{
		From: []string{"queued"}, To: "running",
		Mutate: func(r *state.Record) error {
			r.Doc = []byte(`{"n":1}`)
			r.Status = "completed" // ignored: the transition sets To
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "running" || string(got.Doc) != `{"n":1}` || got.Version != 2 {
		t.Errorf("after transition %+v", got)
	}
	_, err = state.Transition(ctx, s, kind, "x", state.TransitionSpec{From: []string{"queued"}, To: "cancelled"})
	wantErr(t, "queued->cancelled from running", err, state.ErrInvalidTransition)
	boom := errors.New("boom")
	_, err = state.Transition(ctx, s, kind, "x", state.TransitionSpec{From: []string{"running"}, To: "failed",
		Mutate: func(*state.Record) error { return boom }})
	wantErr(t, "mutate error", err, boom)
	if r, _ := s.Get(ctx, kind, "x"); r.Status != "running" || r.Version != 2 {
		t.Errorf("failed mutate changed the record: %+v", r)
	}
	_, err = state.Transition(ctx, s, kind, "nope", state.TransitionSpec{From: []string{"queued"}, To: "running"})
	wantErr(t, "missing record", err, state.ErrNotFound)
	_, err = state.Transition(ctx, s, kind, "x", state.TransitionSpec{To: "running"})
	wantErr(t, "no From", err, state.ErrInvalid)
	if p := list(t, s, state.Query{Kind: kind, Status: []string{"running"}}); p.Total != 1 {
		t.Errorf("running index total %d", p.Total)
	}
}

func testLeases(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	a, err := s.AcquireLease(ctx, "task:1", "pod-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a.Token <= 0 || a.Owner != "pod-a" || a.Name != "task:1" || time.Until(a.ExpiresAt) < 50*time.Second {
		t.Errorf("lease %+v", a)
	}
	_, err = s.AcquireLease(ctx, "task:1", "pod-b", time.Minute)
	wantErr(t, "second owner", err, state.ErrLeaseHeld)
	again, err := s.AcquireLease(ctx, "task:1", "pod-a", time.Minute)
	if err != nil || again.Token != a.Token {
		t.Errorf("re-acquire by the holder: %+v, %v (want same token %d)", again, err, a.Token)
	}
	h, err := s.LeaseHolder(ctx, "task:1")
	if err != nil || h.Owner != "pod-a" || h.Token != a.Token || time.Until(h.ExpiresAt) <= 0 {
		t.Errorf("holder %+v, %v", h, err)
	}
	if _, err := s.RenewLease(ctx, a, 2*time.Minute); err != nil {
		t.Errorf("renew by holder: %v", err)
	}
	impostor := a
	impostor.Owner = "pod-b"
	_, err = s.RenewLease(ctx, impostor, time.Minute)
	wantErr(t, "renew by non-holder", err, state.ErrLeaseLost)
	wantErr(t, "release by non-holder", s.ReleaseLease(ctx, impostor), state.ErrLeaseLost)
	if err := s.ReleaseLease(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err = s.LeaseHolder(ctx, "task:1")
	wantErr(t, "holder after release", err, state.ErrNotFound)
	wantErr(t, "release twice", s.ReleaseLease(ctx, a), state.ErrLeaseLost)
	b, err := s.AcquireLease(ctx, "task:1", "pod-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token <= a.Token {
		t.Errorf("fencing token did not grow: %d then %d", a.Token, b.Token)
	}
	// Leases are independent by name.
	if _, err := s.AcquireLease(ctx, "task:2", "pod-a", time.Minute); err != nil {
		t.Errorf("other lease: %v", err)
	}
}

func testLeaseExpiryAndFencing(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	mustCreate(t, s, state.Record{Kind: kind, ID: "f", Status: "queued"})
	a, err := s.AcquireLease(ctx, "task:f", "pod-a", 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	r, err := state.Transition(ctx, s, kind, "f", state.TransitionSpec{From: []string{"queued"}, To: "running", Fence: a.Fence()})
	if err != nil {
		t.Fatalf("fenced write by the holder: %v", err)
	}
	if r.Fence != a.Token {
		t.Errorf("record fence %d, want %d", r.Fence, a.Token)
	}
	time.Sleep(400 * time.Millisecond) // pod-a pauses past its lease
	_, err = s.LeaseHolder(ctx, "task:f")
	wantErr(t, "holder after expiry", err, state.ErrNotFound)
	_, err = s.RenewLease(ctx, a, time.Minute)
	wantErr(t, "renew after expiry", err, state.ErrLeaseLost)
	b, err := s.AcquireLease(ctx, "task:f", "pod-b", time.Minute)
	if err != nil {
		t.Fatalf("steal after expiry: %v", err)
	}
	if b.Token <= a.Token {
		t.Fatalf("token after steal %d, want > %d", b.Token, a.Token)
	}
	_, err = s.RenewLease(ctx, a, time.Minute)
	wantErr(t, "renew by the old holder", err, state.ErrLeaseLost)
	wantErr(t, "release by the old holder", s.ReleaseLease(ctx, a), state.ErrLeaseLost)
	// The old holder wakes up and tries to write: rejected although its version is current.
	cur, _ := s.Get(ctx, kind, "f")
	cur.Doc = []byte(`{"by":"a"}`)
	_, err = s.Update(ctx, cur, state.UpdateOptions{Fence: a.Fence()})
	wantErr(t, "write with a stale fence", err, state.ErrStaleFence)
	cur.Doc = []byte(`{"by":"b"}`)
	if _, err := s.Update(ctx, cur, state.UpdateOptions{Fence: b.Fence()}); err != nil {
		t.Fatalf("write with the new fence: %v", err)
	}
	got, _ := s.Get(ctx, kind, "f")
	if string(got.Doc) != `{"by":"b"}` || got.Fence != b.Token {
		t.Errorf("record after fenced writes: %+v", got)
	}
	// Releasing does not reset the fence: the stale writer stays rejected.
	if err := s.ReleaseLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	_, err = state.Transition(ctx, s, kind, "f", state.TransitionSpec{From: []string{"running"}, To: "failed", Fence: a.Fence()})
	wantErr(t, "transition with a stale fence after release", err, state.ErrStaleFence)
}

var (
	claimant = state.ClaimOwner{Instance: "pod-1", Incarnation: "aaaa"}
	other    = state.ClaimOwner{Instance: "pod-2", Incarnation: "bbbb"}
)

func testClaims(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	key := "ce:/lensfn/simulation-api:1a2b3c4d/queued"
	c, err := s.Claim(ctx, key, claimant, time.Minute)
	if err != nil || c.State != state.ClaimNew {
		t.Fatalf("first claim %+v, %v", c, err)
	}
	if c, _ := s.Claim(ctx, key, claimant, time.Minute); c.State != state.ClaimPending {
		t.Errorf("second claim by the same process %v, want pending", c.State)
	}
	if c, _ := s.Claim(ctx, key, other, time.Minute); c.State != state.ClaimPending || c.Holder != "pod-1" {
		t.Errorf("claim by another instance %+v, want pending held by pod-1", c)
	}
	if err := s.AbandonClaim(ctx, key, other); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, key, other, time.Minute); c.State != state.ClaimPending {
		t.Errorf("another owner abandoned pod-1's claim: %v", c.State)
	}
	if err := s.AbandonClaim(ctx, key, claimant); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, key, claimant, time.Minute); c.State != state.ClaimNew {
		t.Errorf("claim after abandon %v, want new", c.State)
	}
	if err := s.CompleteClaim(ctx, key, "reply-id:42", time.Hour); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Claim(ctx, key, other, time.Minute)
	if c.State != state.ClaimDone || c.Result != "reply-id:42" {
		t.Errorf("claim after completion %+v", c)
	}
	if err := s.AbandonClaim(ctx, key, claimant); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, key, claimant, time.Minute); c.State != state.ClaimDone {
		t.Errorf("abandon removed a done claim: %v", c.State)
	}
	if err := s.RenewClaim(ctx, key, claimant, time.Minute); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("renewing a done claim: %v, want ErrNotFound", err)
	}
	if err := s.CompleteClaim(ctx, "other", "", time.Hour); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Claim(ctx, "other", claimant, time.Minute); c.State != state.ClaimDone || c.Result != "" {
		t.Errorf("empty result claim %+v", c)
	}
	_, err = s.Claim(ctx, "x", state.ClaimOwner{Instance: "pod-1"}, time.Minute)
	wantErr(t, "claim without an incarnation", err, state.ErrInvalid)
}

// testClaimTakeover: a pending claim left by an earlier incarnation of the same instance (the
// process crashed and was restarted) is taken over at once; another instance's is not.
func testClaimTakeover(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	if c, _ := s.Claim(ctx, "crashed", claimant, time.Hour); c.State != state.ClaimNew {
		t.Fatalf("first claim %v", c.State)
	}
	restarted := state.ClaimOwner{Instance: claimant.Instance, Incarnation: "cccc"}
	if c, _ := s.Claim(ctx, "crashed", other, time.Minute); c.State != state.ClaimPending {
		t.Fatalf("another instance took over a live claim: %v", c.State)
	}
	if c, _ := s.Claim(ctx, "crashed", restarted, time.Minute); c.State != state.ClaimNew {
		t.Fatalf("the restarted instance found its dead incarnation's claim %v, want new", c.State)
	}
	if err := s.RenewClaim(ctx, "crashed", claimant, time.Minute); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("the dead incarnation renewed a claim taken over: %v", err)
	}
	if err := s.RenewClaim(ctx, "crashed", restarted, time.Minute); err != nil {
		t.Errorf("renew by the new holder: %v", err)
	}
}

// testClaimExpiry: a pending claim that is not renewed expires; one renewed outlives its TTL.
func testClaimExpiry(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	if c, _ := s.Claim(ctx, "crash", other, 150*time.Millisecond); c.State != state.ClaimNew {
		t.Fatalf("first claim %v", c.State)
	}
	if c, _ := s.Claim(ctx, "kept", other, 300*time.Millisecond); c.State != state.ClaimNew {
		t.Fatalf("first claim %v", c.State)
	}
	if err := s.CompleteClaim(ctx, "done", "r", 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		if err := s.RenewClaim(ctx, "kept", other, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := s.Claim(ctx, "crash", claimant, time.Minute); c.State != state.ClaimNew {
		t.Errorf("claim after the pending attempt expired: %v, want new", c.State)
	}
	if c, _ := s.Claim(ctx, "done", claimant, time.Minute); c.State != state.ClaimNew {
		t.Errorf("claim after the done record expired: %v, want new", c.State)
	}
	if c, _ := s.Claim(ctx, "kept", claimant, time.Minute); c.State != state.ClaimPending {
		t.Errorf("a renewed claim expired: %v", c.State)
	}
}

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

func testCounters(t *testing.T, s state.Store) {
	ctx := ctxT(t)
	for want := int64(1); want <= 3; want++ {
		if n, err := s.Incr(ctx, "task-ids"); err != nil || n != want {
			t.Fatalf("Incr = %d, %v; want %d", n, err, want)
		}
	}
	if n, _ := s.Incr(ctx, "other"); n != 1 {
		t.Errorf("independent counter = %d", n)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

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
