package sse_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/sse"
)

// feed is a Source over an in-memory list whose cursor is the index of the last event sent.
type feed struct {
	mu     sync.Mutex
	events []string
	done   bool
	wake   chan struct{}
}

func newFeed(events ...string) *feed { return &feed{events: events, wake: make(chan struct{}, 1)} }

func (f *feed) add(ev string, done bool) {
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.done = done
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *feed) Next(ctx context.Context, cursor string, wait time.Duration) ([]sse.Event, bool, error) {
	from := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil {
			return nil, false, errors.New("bad cursor")
		}
		from = n + 1
	}
	for {
		f.mu.Lock()
		var out []sse.Event
		for i := from; i < len(f.events); i++ {
			out = append(out, sse.Event{ID: strconv.Itoa(i), Type: "log", Data: map[string]string{"line": f.events[i]}})
		}
		done := f.done
		f.mu.Unlock()
		if len(out) > 0 || done || wait == 0 {
			return out, done, nil
		}
		select {
		case <-f.wake:
		case <-time.After(wait):
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

func (f *feed) Final(context.Context) (sse.Event, error) {
	return sse.Event{Type: "end", Data: map[string]string{"status": "completed"}}, nil
}

func serve(t *testing.T, f *feed, lim sse.Limits) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cursor, err := sse.Cursor(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := sse.Serve(w, r, f, cursor, lim); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func collect(t *testing.T, url, lastID string) ([]sse.Message, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []sse.Message
	if err := sse.Read(resp.Body, func(m sse.Message) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	return got, resp
}

func TestStreamLiveEventsThenFinal(t *testing.T) {
	f := newFeed("one")
	url := serve(t, f, sse.Limits{Poll: 50 * time.Millisecond})
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.add("two", false)
		f.add("three", true)
	}()
	got, resp := collect(t, url, "")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var lines []string
	for _, m := range got {
		lines = append(lines, m.ID+"/"+m.Type+"/"+m.Data)
	}
	want := `0/log/{"line":"one"}|1/log/{"line":"two"}|2/log/{"line":"three"}|/end/{"status":"completed"}`
	if strings.Join(lines, "|") != want {
		t.Fatalf("got %s\nwant %s", strings.Join(lines, "|"), want)
	}
}

func TestResumeAfterLastEventID(t *testing.T) {
	f := newFeed("a", "b", "c")
	f.done = true
	got, _ := collect(t, serve(t, f, sse.Limits{}), "0")
	if len(got) != 3 || got[0].ID != "1" || got[1].ID != "2" || got[2].Type != "end" {
		t.Fatalf("%+v", got)
	}
}

func TestMaxEventsClosesAndTheClientResumes(t *testing.T) {
	f := newFeed("a", "b", "c", "d", "e")
	f.done = true
	url := serve(t, f, sse.Limits{MaxEvents: 2})
	var ids []string
	last := ""
	for range 10 {
		got, _ := collect(t, url, last)
		ended := false
		for _, m := range got {
			if m.Type == "end" {
				ended = true
				continue
			}
			ids, last = append(ids, m.ID), m.ID
		}
		if ended {
			break
		}
	}
	if strings.Join(ids, ",") != "0,1,2,3,4" {
		t.Fatalf("ids %v", ids)
	}
}

func TestHeartbeatWhileIdleAndMaxDuration(t *testing.T) {
	f := newFeed()
	url := serve(t, f, sse.Limits{Heartbeat: 20 * time.Millisecond, MaxDuration: 300 * time.Millisecond})
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := new(strings.Builder)
	start := time.Now()
	_, _ = fmt.Fprint(buf, readAll(resp))
	if !strings.Contains(buf.String(), ": heartbeat") {
		t.Fatalf("no heartbeat in %q", buf.String())
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("MaxDuration did not close the connection")
	}
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func TestCursorRejectsControlCharactersAndLength(t *testing.T) {
	for name, id := range map[string]string{"long": strings.Repeat("1", 65), "control": "1\x01"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Last-Event-ID", id)
		if _, err := sse.Cursor(r); !errors.Is(err, sse.ErrBadCursor) {
			t.Errorf("%s: %v", name, err)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/?lastEventId=12-0", nil)
	if c, err := sse.Cursor(r); err != nil || c != "12-0" {
		t.Fatalf("%q %v", c, err)
	}
}
