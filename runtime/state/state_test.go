package state_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"simple", "task", true},
		{"with dash, dot, underscore, digit", "preparing-monitoring.v2_x", true},
		{"empty", "", false},
		{"upper case", "Task", false},
		{"colon would split keys", "a:b", false},
		{"space", "a b", false},
		{"too long", strings.Repeat("a", 65), false},
		{"longest", strings.Repeat("a", 64), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := state.ValidateName("kind", tc.in)
			if tc.ok != (err == nil) {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, state.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestValidateIDAndKey(t *testing.T) {
	for _, id := range []string{"1a2b3c4d", "00000000-0000-4000-8000-000000000001", "Run_7.x"} {
		if err := state.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", "a:b", "a/b", "a b", strings.Repeat("x", 201)} {
		if err := state.ValidateID(id); !errors.Is(err, state.ErrInvalid) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalid", id, err)
		}
	}
	if err := state.ValidateKey("claim key", "ce:/lensfn/sim:1a2b/queued"); err != nil {
		t.Errorf("key with slashes and colons: %v", err)
	}
	for _, k := range []string{"", "a\nb", strings.Repeat("k", 513)} {
		if err := state.ValidateKey("claim key", k); !errors.Is(err, state.ErrInvalid) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalid", k, err)
		}
	}
}

func TestQueryValidate(t *testing.T) {
	q, err := state.Query{Kind: "task"}.Validate()
	if err != nil || q.Limit != state.DefaultLimit {
		t.Fatalf("default limit: %+v, %v", q, err)
	}
	now := time.Now()
	bad := map[string]state.Query{
		"no kind":         {},
		"negative offset": {Kind: "task", Offset: -1},
		"negative limit":  {Kind: "task", Limit: -1},
		"limit too large": {Kind: "task", Limit: state.MaxLimit + 1},
		"bad status":      {Kind: "task", Status: []string{"Running"}},
		"bad attr name":   {Kind: "task", Attrs: map[string]string{"a:b": "x"}},
		"inverted range":  {Kind: "task", CreatedAfter: now, CreatedBefore: now.Add(-time.Millisecond)},
	}
	for name, q := range bad {
		if _, err := q.Validate(); !errors.Is(err, state.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestRecordClone(t *testing.T) {
	r := state.Record{Attrs: map[string]string{"model": "a"}, Doc: []byte(`{}`)}
	c := r.Clone()
	c.Attrs["model"] = "b"
	c.Doc[0] = '['
	if r.Attrs["model"] != "a" || string(r.Doc) != `{}` {
		t.Errorf("Clone shares memory with the original: %+v", r)
	}
}

// racingRecords answers Get with a fixed record and fails the first conflicts Updates with
// ErrVersionConflict, as if other writers kept winning.
type racingRecords struct {
	state.Records
	current   state.Record
	conflicts int
	gets      int
	updates   []state.Record
}

func (r *racingRecords) Get(context.Context, string, string) (state.Record, error) {
	r.gets++
	return r.current.Clone(), nil
}

func (r *racingRecords) Update(_ context.Context, next state.Record, _ state.UpdateOptions) (state.Record, error) {
	r.updates = append(r.updates, next)
	if r.conflicts > 0 {
		r.conflicts--
		return state.Record{}, state.ErrVersionConflict
	}
	next.Version++
	return next, nil
}

func TestTransitionRetriesConflicts(t *testing.T) {
	recs := &racingRecords{current: state.Record{Kind: "task", ID: "a", Status: "queued", Version: 4}, conflicts: 2}
	mutations := 0
	got, err := state.Transition(context.Background(), recs, "task", "a", state.TransitionSpec{
		From: []string{"queued"}, To: "running",
		Mutate: func(r *state.Record) error {
			mutations++
			r.Search = "x"
			r.Status = "ignored"
			r.Version = 99
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if recs.gets != 3 || mutations != 3 || len(recs.updates) != 3 {
		t.Errorf("gets %d, mutations %d, updates %d; want 3 each", recs.gets, mutations, len(recs.updates))
	}
	for _, u := range recs.updates {
		if u.Status != "running" || u.Version != 4 || u.Search != "x" {
			t.Errorf("update sent %+v, want status running at the read version 4", u)
		}
	}
	if got.Version != 5 {
		t.Errorf("result version %d", got.Version)
	}
}

func TestTransitionGivesUp(t *testing.T) {
	recs := &racingRecords{current: state.Record{Kind: "task", ID: "a", Status: "queued", Version: 1}, conflicts: 100}
	_, err := state.Transition(context.Background(), recs, "task", "a", state.TransitionSpec{
		From: []string{"queued"}, To: "running", MaxAttempts: 5})
	if !errors.Is(err, state.ErrVersionConflict) || len(recs.updates) != 5 {
		t.Errorf("after %d updates: %v, want ErrVersionConflict after 5", len(recs.updates), err)
	}
}

func TestTransitionRejectsWrongStatus(t *testing.T) {
	recs := &racingRecords{current: state.Record{Kind: "task", ID: "a", Status: "completed", Version: 3}}
	cur, err := state.Transition(context.Background(), recs, "task", "a", state.TransitionSpec{
		From: []string{"queued", "running"}, To: "cancelled"})
	if !errors.Is(err, state.ErrInvalidTransition) || len(recs.updates) != 0 {
		t.Errorf("%v with %d updates, want ErrInvalidTransition and none", err, len(recs.updates))
	}
	if cur.Status != "completed" {
		t.Errorf("returned %+v, want the current record so callers can report its status", cur)
	}
}
