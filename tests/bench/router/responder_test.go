//go:build linux

package router_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The lean responder answers each request, pipelined or split across writes, with exactly the
// bytes captured from the upstream it stands in for, keeps the connection open, and closes it
// after a request asking so; one it cannot frame closes its connection unanswered.
func TestLeanResponderAnswersTheCapturedBytes(t *testing.T) {
	sim := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			answer(w, 404, "no")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		answer(w, 200, `{"id":"chatcmpl-1","choices":[{"message":{"content":"hi"}}]}`)
	})
	captured := captureAnswer(t, sim, "/v1/chat/completions", []byte(chatBody))
	if !bytes.HasPrefix(captured, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(captured, []byte(`"hi"}}]}`)) {
		t.Fatalf("captured %q: want the simulator's whole answer", captured)
	}
	_, addr := startResponder(t, -1, captured)
	conn, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	// two pipelined in one write, then a third split inside its header and its body
	send := [][]byte{append(bytes.Clone(req), req...), req[:20], req[20 : len(req)-2], req[len(req)-2:]}
	for _, part := range send {
		if _, err := conn.Write(part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the split parts arrive as separate reads
	}
	got := make([]byte, 3*len(captured))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat(captured, 3); !bytes.Equal(got, want) {
		t.Fatalf("answers %q, want the captured answer three times", got)
	}
	if _, err := conn.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(conn); err != nil || !bytes.Equal(rest, captured) {
		t.Fatalf("after Connection: close: %q, %v: want one answer, then the end of the connection", rest, err)
	}

	chunked, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer chunked.Close()
	_ = chunked.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := chunked.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(chunked); err != nil || len(rest) != 0 {
		t.Fatalf("a chunked request: %q, %v: want the connection closed unanswered", rest, err)
	}
}

// The open-loop sender against the lean responder: every request answered 200, none lost.
func TestOpenLoopAgainstTheLeanResponder(t *testing.T) {
	sim := serve(t, func(w http.ResponseWriter, r *http.Request) { answer(w, 200, `{"ok":true}`) })
	_, addr := startResponder(t, -1, captureAnswer(t, sim, "/v1/chat/completions", []byte(chatBody)))
	o, err := newOpenLoop(addr, "/v1/chat/completions", []byte(chatBody), 2000, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.errors != 0 || len(res.latencyUS) != 500 {
		t.Fatalf("errors %d, answered %d: want 0 and 500", res.errors, len(res.latencyUS))
	}
}
