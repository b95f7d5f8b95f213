package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/conntest"
)

// firstEventThenStall is a server that answers a request with a stream's head and one event,
// then sends nothing more until the client goes.
func firstEventThenStall(t *testing.T) string {
	return rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if readRequest(br) != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"d\r\ndata: first\n\n\r\n")
		_, _ = io.Copy(io.Discard, br) // until the client gives up
	})
}

// readFirstEvent reads the stream's first event from resp.
func readFirstEvent(t *testing.T, resp *Response) {
	t.Helper()
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "data: first\n\n" {
		t.Fatalf("first read %q %v", buf[:n], err)
	}
}

// readFails reads resp's body on another goroutine and waits at most within for the read to
// fail; it returns the error.
func readFails(t *testing.T, resp *Response, within time.Duration) error {
	t.Helper()
	readErr := make(chan error, 1)
	go func() { _, err := resp.Body.Read(make([]byte, 64)); readErr <- err }()
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("the read succeeded")
		}
		return err
	case <-time.After(within):
		t.Fatalf("the read was still blocked after %s", within)
	}
	return nil
}

// A group request's deadline bounds its whole exchange: the wait for the response's head and
// the reads of its body, which fail with os.ErrDeadlineExceeded; the connection is not reused.
func TestGroupRequestDeadline(t *testing.T) {
	stalled := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		_ = readRequest(br)
		_, _ = io.Copy(io.Discard, br)
	})
	c := New(Options{})
	defer c.Close()
	g := c.Group(context.Background())
	defer g.Close()
	doErr := make(chan error, 1)
	go func() {
		_, err := g.Do(time.Now().Add(150*time.Millisecond), target(t, stalled), nil, []byte("{}"))
		doErr <- err
	}()
	select {
	case err := <-doErr:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("error %v, want %v", err, os.ErrDeadlineExceeded)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request still waited for the response's head 5 s after its deadline")
	}

	resp, err := g.Do(time.Now().Add(200*time.Millisecond), target(t, firstEventThenStall(t)), nil, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	readFirstEvent(t, resp)
	// A later read deadline does not extend the request's own.
	if err := resp.Body.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := readFails(t, resp, 5*time.Second); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read error %v, want %v", err, os.ErrDeadlineExceeded)
	}
	resp.Body.Close()
	if c.IdleConns() != 0 {
		t.Error("a connection its deadline ended went back to the pool")
	}
	if _, err := g.Do(time.Now().Add(-time.Second), target(t, stalled), nil, nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a request past its deadline: error %v, want %v", err, os.ErrDeadlineExceeded)
	}
}

// The group's context ending unblocks every request of the group in flight at once, leaves no
// goroutine or connection behind, and fails the group's later requests with its cause.
func TestGroupEndStopsEveryRequestInFlight(t *testing.T) {
	srv := stalledStreamServer(t)
	c := New(Options{})
	tg := target(t, srv.URL)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancelCause(context.Background())
	g := c.Group(ctx)
	defer g.Close()
	var inFlight []*Response
	for range 5 {
		resp, err := g.Do(time.Time{}, tg, nil, []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		readFirstEvent(t, resp)
		inFlight = append(inFlight, resp)
	}
	stopped := errors.New("stopped")
	cancel(stopped)
	for _, resp := range inFlight {
		readFails(t, resp, 5*time.Second)
		resp.Body.Close()
	}
	if c.IdleConns() != 0 {
		t.Error("a connection of an ended group went back to the pool")
	}
	if _, err := g.Do(time.Time{}, tg, nil, nil); !errors.Is(err, stopped) {
		t.Errorf("a request after the group's end: error %v, want its cause", err)
	}
	c.Close()
	goroutinesSettle(t, before) // the server's handlers end when their connections close
}

// A group ending after its request was read to the end leaves the pooled connection alone, and
// a group's connections serve other requests in turn.
func TestGroupEndingAfterCloseLeavesThePooledConnectionAlone(t *testing.T) {
	srv, conns := conntest.CountingServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	c := New(Options{})
	defer c.Close()
	tg := target(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	g := c.Group(ctx)
	for range 3 {
		resp, err := g.Do(time.Now().Add(time.Minute), tg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err := io.ReadAll(resp.Body); err != nil || string(raw) != "ok" {
			t.Fatalf("body %q, %v", raw, err)
		}
		resp.Body.Close()
	}
	cancel()
	g.Close()
	if _, body := get(t, c, tg, ""); body != "ok" || conns.Load() != 1 {
		t.Fatalf("body %q over %d connections, want one", body, conns.Load())
	}
}
