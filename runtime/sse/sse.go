package sse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/auth"
)

// Event is one message of a stream. ID is the source's cursor (the client sends it back as
// Last-Event-ID to resume); Type becomes the SSE "event:" field; Data is JSON-encoded.
type Event struct {
	ID   string
	Type string
	Data any
}

// Source feeds a stream. Next returns the events after cursor ("" = from the start), waiting up
// to wait for one when none is ready; it returns done=true when the subject is finished and no
// event after those returned will ever come (the stream then sends Final and closes).
type Source interface {
	Next(ctx context.Context, cursor string, wait time.Duration) (events []Event, done bool, err error)
	// Final is the closing event, read once the source reported done.
	Final(ctx context.Context) (Event, error)
}

// Limits bound one connection.
type Limits struct {
	Heartbeat   time.Duration // a comment line after this much idle time (default 15s)
	Poll        time.Duration // how long one Next may wait (default 2s, at most Heartbeat)
	MaxDuration time.Duration // the connection is closed after this (default 30m); clients resume
	MaxEvents   int           // events sent per connection before it is closed (default 10000)
}

func (l Limits) withDefaults() Limits {
	if l.Heartbeat <= 0 {
		l.Heartbeat = 15 * time.Second
	}
	if l.Poll <= 0 {
		l.Poll = 2 * time.Second
	}
	l.Poll = min(l.Poll, l.Heartbeat)
	if l.MaxDuration <= 0 {
		l.MaxDuration = 30 * time.Minute
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = 10000
	}
	return l
}

// recheckEvery is how often an open stream asks whether its credential still holds (a store
// read); with the poll's wait a revoked token's stream ends within about three seconds.
const recheckEvery = time.Second

// MaxCursorBytes bounds the Last-Event-ID a client may send.
const MaxCursorBytes = 64

// ErrBadCursor is returned by Cursor for a Last-Event-ID that is too long or not printable.
var ErrBadCursor = errors.New("sse: Last-Event-ID is too long or holds control characters")

// Cursor returns where a request resumes: the Last-Event-ID header, or the lastEventId query
// parameter (for clients that cannot set headers), "" when neither is set.
func Cursor(r *http.Request) (string, error) {
	c := r.Header.Get("Last-Event-ID")
	if c == "" {
		c = r.URL.Query().Get("lastEventId")
	}
	if len(c) > MaxCursorBytes || strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", ErrBadCursor
	}
	return c, nil
}

// Serve streams src to w from cursor until the source is done, the client goes away or a limit
// is reached. Errors before the first byte are returned for the caller to answer (a problem);
// after it, an error ends the stream with an "error" event, since the status is already sent.
func Serve(w http.ResponseWriter, r *http.Request, src Source, cursor string, lim Limits) error {
	lim = lim.withDefaults()
	flusher, ok := w.(http.Flusher)
	if !ok {
		return errors.New("sse: the response writer cannot flush")
	}
	ctx, cancel := context.WithTimeout(r.Context(), lim.MaxDuration)
	defer cancel()

	// The first read happens before the headers so that a store error is still a problem answer.
	events, done, err := src.Next(ctx, cursor, 0)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(w, "retry: %d\n\n", 2000)
	flusher.Flush()

	sent := 0
	lastWrite, recheckAt := time.Now(), time.Now().Add(recheckEvery)
	for {
		for _, ev := range events {
			if err := write(w, ev); err != nil {
				return nil // the client went away
			}
			cursor = ev.ID
			sent++
			if sent >= lim.MaxEvents {
				flusher.Flush()
				return nil // the client resumes from cursor
			}
		}
		if len(events) > 0 {
			flusher.Flush()
			lastWrite = time.Now()
		}
		if done {
			final, err := src.Final(ctx)
			if err != nil {
				_ = write(w, Event{Type: "error", Data: map[string]string{"detail": err.Error()}})
			} else {
				_ = write(w, final)
			}
			flusher.Flush()
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(lastWrite) >= lim.Heartbeat {
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return nil
			}
			flusher.Flush()
			lastWrite = time.Now()
		}
		// The credential the stream was opened with is asked about again: a revoked token's
		// streams end within seconds.
		if time.Now().After(recheckAt) {
			recheckAt = time.Now().Add(recheckEvery)
			if err := auth.Recheck(ctx); errors.Is(err, auth.ErrInvalid) {
				_ = write(w, Event{Type: "error", Data: map[string]string{"detail": "the token this stream was opened with is no longer valid"}})
				flusher.Flush()
				return nil
			}
		}
		events, done, err = src.Next(ctx, cursor, lim.Poll)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			_ = write(w, Event{Type: "error", Data: map[string]string{"detail": "the progress stream could not be read; reconnect to resume"}})
			flusher.Flush()
			return nil
		}
	}
}

// write sends one event; data is one JSON line, so it never holds a newline.
func write(w http.ResponseWriter, ev Event) error {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return err
	}
	var b strings.Builder
	if ev.ID != "" {
		b.WriteString("id: " + ev.ID + "\n")
	}
	if ev.Type != "" {
		b.WriteString("event: " + ev.Type + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, err = w.Write([]byte(b.String()))
	return err
}
