package sse

import (
	"errors"
	"net/http"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// Slots bounds the streams one instance holds open (a slot per open stream).
type Slots chan struct{}

// NewSlots allows n open streams.
func NewSlots(n int) Slots { return make(Slots, n) }

// Open is how many streams hold a slot now.
func (s Slots) Open() int { return len(s) }

// ServeProgress answers a request for a record's progress stream: it resumes after the
// request's Last-Event-ID, takes a slot for the connection's lifetime and serves src. A bad
// cursor is a 400 problem, no free slot a 429 naming what to poll instead (what: "the task"),
// a cursor that is no id of this stream a 400; after the first byte errors end the stream.
func ServeProgress(w http.ResponseWriter, r *http.Request, slots Slots, lim Limits, src *ProgressSource, what string) error {
	cursor, err := Cursor(r)
	if err != nil {
		return problem.New(problem.CodeBadRequest, "%v", err)
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	default:
		return problem.New(problem.CodeTooManyRequest, "too many event streams are open on this instance; poll %s or retry later", what)
	}
	err = Serve(w, r, src, cursor, lim)
	if errors.Is(err, state.ErrInvalid) {
		return problem.New(problem.CodeBadRequest, "Last-Event-ID %q is not an event id of this stream", cursor)
	}
	return err
}
