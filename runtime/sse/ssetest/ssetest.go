package ssetest

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/sse"
)

// Watch opens the event stream at url (after lastID when it is not "") with the default
// client and delivers its events on a channel closed when the stream ends. A non-200 answer or
// another content type fails the test.
func Watch(t testing.TB, url, lastID string) <-chan sse.Message {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	out := make(chan sse.Message, 64)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		_ = sse.Read(resp.Body, func(m sse.Message) error { out <- m; return nil })
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return out
}

// Next is the stream's next event; the test fails when the stream ends or nothing comes within
// 20 s.
func Next(t testing.TB, ch <-chan sse.Message) sse.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended early")
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20s")
	}
	return sse.Message{}
}
