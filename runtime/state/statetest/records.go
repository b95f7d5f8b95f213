package statetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

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
