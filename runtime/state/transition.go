package state

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// TransitionSpec describes a status change.
type TransitionSpec struct {
	From []string // statuses the record may be in; the transition fails otherwise
	To   string
	// Mutate, when set, edits the record (Doc, Attrs, Search) on top of the freshly read
	// version. It may run several times when writers race, so it must be a pure function of
	// the record it is given. Its error aborts the transition unchanged.
	Mutate func(*Record) error
	Fence  Fence // carried to Update; zero means no fencing
	// MaxAttempts bounds the re-read-and-retry loop on version conflicts (default 32).
	MaxAttempts int
}

// Transition moves a record from one of spec.From to spec.To. It reads the record, checks
// the status, applies Mutate and writes with the version it read; when another writer got
// there first it re-reads and tries again. When the current status is not in From it
// returns ErrInvalidTransition, so of many concurrent callers attempting the same step
// exactly one succeeds.
func Transition(ctx context.Context, records Records, kind, id string, spec TransitionSpec) (Record, error) {
	if err := ValidateName("target status", spec.To); err != nil {
		return Record{}, err
	}
	if len(spec.From) == 0 {
		return Record{}, fmt.Errorf("%w: transition to %s lists no allowed source status", ErrInvalid, spec.To)
	}
	attempts := spec.MaxAttempts
	if attempts <= 0 {
		attempts = 32
	}
	var lastErr error
	for range attempts {
		current, err := records.Get(ctx, kind, id)
		if err != nil {
			return Record{}, err
		}
		if !slices.Contains(spec.From, current.Status) {
			return current, fmt.Errorf("%w: %s %s is %s, expected one of %v", ErrInvalidTransition,
				kind, id, current.Status, spec.From)
		}
		next := current.Clone()
		if spec.Mutate != nil {
			if err := spec.Mutate(&next); err != nil {
				return current, err
			}
		}
		next.Kind, next.ID, next.Version = current.Kind, current.ID, current.Version
		next.Status = spec.To
		stored, err := records.Update(ctx, next, UpdateOptions{Fence: spec.Fence})
		if err == nil {
			return stored, nil
		}
		if !errors.Is(err, ErrVersionConflict) {
			return current, err
		}
		lastErr = err
		if err := ctx.Err(); err != nil {
			return current, err
		}
	}
	return Record{}, fmt.Errorf("transition %s %s to %s: gave up after %d attempts: %w", kind, id, spec.To, attempts, lastErr)
}

// SourcesOf returns the statuses (of all, in their order) from which to is reachable by one edge
// of can: the From list of a TransitionSpec.
func SourcesOf(all []string, can func(from, to string) bool, to string) []string {
	var from []string
	for _, s := range all {
		if s != to && can(s, to) {
			from = append(from, s)
		}
	}
	return from
}
