package recordrepo

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// Repo keeps documents of type T as records of one kind.
type Repo[T any] struct {
	Store  state.Store
	Sealer *secret.Sealer // nil: documents with API keys are refused
	Kind   string
	// NoSealer is the error of sealing or opening a key without a Sealer (the record package's
	// own sentinel, so its callers keep matching it).
	NoSealer error
	// Encode makes a document's record at version (Doc, Status, Attrs, Search, CreatedAt).
	Encode func(doc T, version int64) (state.Record, error)
	// Decode reads a record back; the record's status is the document's.
	Decode func(rec state.Record) (T, error)
	// SetStatus writes the status a transition moves the document to, before its mutation.
	SetStatus func(doc T, status string)
}

// SealKey seals an endpoint API key for the record id.
func (r *Repo[T]) SealKey(id, key string) (string, error) {
	if r.Sealer == nil {
		return "", r.NoSealer
	}
	return r.Sealer.Seal(key, r.sealContext(id)), nil
}

// OpenKey opens a sealed key of the record id ("" when there is none).
func (r *Repo[T]) OpenKey(id, sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	if r.Sealer == nil {
		return "", r.NoSealer
	}
	return r.Sealer.Open(sealed, r.sealContext(id))
}

func (r *Repo[T]) sealContext(id string) string { return r.Kind + ":" + id }

// Create stores a new document; state.ErrExists when its id is taken.
func (r *Repo[T]) Create(ctx context.Context, doc T) error {
	rec, err := r.Encode(doc, 0)
	if err != nil {
		return err
	}
	_, err = r.Store.Create(ctx, rec)
	return err
}

// Load returns the document without its logs.
func (r *Repo[T]) Load(ctx context.Context, id string) (T, error) {
	rec, err := r.Store.Get(ctx, r.Kind, id)
	if err != nil {
		var zero T
		return zero, err
	}
	return r.Decode(rec)
}

// Logs returns the record's retained log lines (never nil) and whether older ones were dropped.
func (r *Repo[T]) Logs(ctx context.Context, id string) ([]string, bool, error) {
	logs, err := r.Store.ReadLogs(ctx, r.Kind, id)
	if err != nil {
		return nil, false, err
	}
	lines := logs.Lines
	if lines == nil {
		lines = []string{}
	}
	return lines, logs.Truncated(), nil
}

// Transition moves a document from one of from to status to, applying mutate; see
// state.Transition for the concurrency contract.
func (r *Repo[T]) Transition(ctx context.Context, id string, from []string, to string, fence state.Fence, mutate func(T) error) (T, error) {
	var out T
	_, err := state.Transition(ctx, r.Store, r.Kind, id, state.TransitionSpec{
		From: from, To: to, Fence: fence,
		Mutate: func(rec *state.Record) error {
			doc, err := r.Decode(*rec)
			if err != nil {
				return err
			}
			r.SetStatus(doc, to)
			if mutate != nil {
				if err := mutate(doc); err != nil {
					return err
				}
			}
			next, err := r.Encode(doc, rec.Version)
			if err != nil {
				return err
			}
			rec.Doc, rec.Attrs, rec.Search = next.Doc, next.Attrs, next.Search
			out = doc
			return nil
		},
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// Log appends one line to the record's log (the store keeps the newest 500), stamped with the
// time of day; it returns the stamped line.
func (r *Repo[T]) Log(ctx context.Context, id, format string, args ...any) string {
	line := time.Now().UTC().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...)
	_ = r.Store.AppendLogs(ctx, r.Kind, id, line)
	return line
}

// Delete removes the record (with its indexes, logs and progress), then its artifact folder.
func (r *Repo[T]) Delete(ctx context.Context, id string, version int64, dir string) error {
	if err := r.Store.Delete(ctx, r.Kind, id, state.DeleteOptions{Version: version}); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
