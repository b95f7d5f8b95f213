package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// ErrUnchanged, returned by an Update mutation, leaves the record as it is.
var ErrUnchanged = errors.New("workflow: unchanged")

// Repo keeps workflows in the state store.
type Repo struct{ Store state.Store }

func attrs(w *Workflow) map[string]string {
	return map[string]string{"cluster_session_id": w.ClusterSessionID.Get(), "workflow_kind": w.Internal.Kind}
}

func (r *Repo) record(w *Workflow, version int64) (state.Record, error) {
	doc, err := Marshal(w)
	if err != nil {
		return state.Record{}, err
	}
	rec := state.Record{Kind: Kind, ID: w.ID, Status: w.Status, Version: version, Attrs: attrs(w),
		Search: strings.ToLower(w.ID + " " + w.Name.Get() + " " + w.Model.Get()), Doc: doc}
	if created, err := time.Parse(time.RFC3339Nano, w.CreatedAt); err == nil {
		rec.CreatedAt = created
	}
	return rec, nil
}

// Create stores a new workflow (state.ErrExists when the id is taken).
func (r *Repo) Create(ctx context.Context, w *Workflow) error {
	rec, err := r.record(w, 0)
	if err != nil {
		return err
	}
	if _, err = r.Store.Create(ctx, rec); err == nil {
		r.appendChanges(ctx, statuses{}, w)
	}
	return err
}

// Get returns a workflow and the version it was read at.
func (r *Repo) Get(ctx context.Context, id string) (*Workflow, int64, error) {
	rec, err := r.Store.Get(ctx, Kind, id)
	if err != nil {
		return nil, 0, err
	}
	w, err := fromRecord(rec)
	return w, rec.Version, err
}

func fromRecord(rec state.Record) (*Workflow, error) {
	w, err := Unmarshal(rec.Doc)
	if err != nil {
		return nil, err
	}
	w.Status = rec.Status
	return w, nil
}

// List returns up to limit workflows in any of statuses (all when none), newest first.
func (r *Repo) List(ctx context.Context, limit int, statuses ...string) ([]*Workflow, error) {
	page, err := r.Store.List(ctx, state.Query{Kind: Kind, Status: statuses, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*Workflow, 0, len(page.Records))
	for _, rec := range page.Records {
		if w, err := fromRecord(rec); err == nil {
			out = append(out, w)
		}
	}
	return out, nil
}

// Update reads the workflow, applies mutate and writes it back under the version it read,
// retrying when another writer came first, so every mutation sees the newest record. A status
// change must follow the transition table (state.ErrInvalidTransition otherwise); a mutation
// returning ErrUnchanged writes nothing. It returns the workflow as stored.
func (r *Repo) Update(ctx context.Context, id string, mutate func(*Workflow) error) (*Workflow, error) {
	for range 16 {
		rec, err := r.Store.Get(ctx, Kind, id)
		if err != nil {
			return nil, err
		}
		w, err := fromRecord(rec)
		if err != nil {
			return nil, err
		}
		before := statusesOf(w)
		if err := mutate(w); errors.Is(err, ErrUnchanged) {
			return w, nil
		} else if err != nil {
			return nil, err
		}
		if !CanTransition(rec.Status, w.Status) {
			return nil, fmt.Errorf("%w: workflow %s from %s to %s", state.ErrInvalidTransition, id, rec.Status, w.Status)
		}
		next, err := r.record(w, rec.Version)
		if err != nil {
			return nil, err
		}
		next.CreatedAt = rec.CreatedAt
		if _, err := r.Store.Update(ctx, next, state.UpdateOptions{}); errors.Is(err, state.ErrVersionConflict) {
			continue
		} else if err != nil {
			return nil, err
		}
		r.appendChanges(ctx, before, w)
		return w, nil
	}
	return nil, fmt.Errorf("workflow: %s kept changing; try again", id)
}

// Delete removes the workflow if it is still at version.
func (r *Repo) Delete(ctx context.Context, id string, version int64) error {
	return r.Store.Delete(ctx, Kind, id, state.DeleteOptions{Version: version})
}
