package sse

import (
	"context"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// ProgressSource streams a record's progress stream from the state store: each entry is an
// event whose id is the stream id, so Last-Event-ID resumes exactly after it.
type ProgressSource struct {
	Store    state.Progress
	Kind, ID string
	// Decode turns an entry's fields into the event's type and data.
	Decode func(fields map[string]string) (typ string, data any)
	// Finished reports whether the record reached a final state, with the closing event. It is
	// asked when the stream has nothing new, and the stream is read again after it says done,
	// so every entry written before the final state is sent before the closing event.
	Finished func(ctx context.Context) (final Event, done bool, err error)

	final Event
}

// batch bounds the entries one read takes.
const batch = 200

func (p *ProgressSource) Next(ctx context.Context, cursor string, wait time.Duration) ([]Event, bool, error) {
	entries, err := p.Store.ReadProgress(ctx, p.Kind, p.ID, cursor, batch, 0)
	if err != nil {
		return nil, false, err
	}
	if len(entries) == 0 {
		final, done, err := p.Finished(ctx)
		if err != nil {
			return nil, false, err
		}
		if done {
			// Entries written between the empty read and the check (the final status among
			// them) are sent before the end.
			if entries, err = p.Store.ReadProgress(ctx, p.Kind, p.ID, cursor, batch, 0); err != nil || len(entries) == 0 {
				p.final = final
				return nil, err == nil, err
			}
		} else if wait > 0 {
			if entries, err = p.Store.ReadProgress(ctx, p.Kind, p.ID, cursor, batch, wait); err != nil {
				return nil, false, err
			}
		}
	}
	out := make([]Event, 0, len(entries))
	for _, e := range entries {
		typ, data := p.Decode(e.Fields)
		out = append(out, Event{ID: e.ID, Type: typ, Data: data})
	}
	return out, false, nil
}

func (p *ProgressSource) Final(context.Context) (Event, error) { return p.final, nil }
