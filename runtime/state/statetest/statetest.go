package statetest

import (
	"context"
	"errors"
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
