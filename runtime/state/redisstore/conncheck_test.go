//go:build unix && !aix

package redisstore

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
)

// The check of a borrowed idle connection: it looks at the socket (no PING, however recently
// the connection was used), sees past redigo's leftover read deadline, allocates nothing, and
// refuses a connection with an unread reply or one the server closed.
func TestBorrowCheckLooksAtTheSocket(t *testing.T) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ep, err := parseURL("redis://" + m.Addr() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	borrow := newPool(ep, 1).TestOnBorrow
	dialed := func() redis.Conn {
		c, err := dial(context.Background(), ep)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Do("PING"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// refused waits until the check refuses c: the server's bytes reach the socket a moment later.
	refused := func(c redis.Conn) error {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if err := borrow(c, time.Now()); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				t.Fatal("the check still lends the connection")
			}
		}
	}

	idle := dialed()
	if err := borrow(idle, time.Now()); err != nil {
		t.Fatalf("an idle connection: %v", err)
	}
	_ = idle.(*checkedConn).socket.SetReadDeadline(time.Unix(1, 0)) // what redigo leaves behind
	if err := borrow(idle, time.Now()); err != nil {
		t.Fatalf("an idle connection with an expired read deadline: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = borrow(idle, time.Now()) }); n != 0 {
		t.Errorf("a borrow check allocates %v times, want 0", n)
	}

	outOfStep := dialed()
	if err := outOfStep.Send("PING"); err != nil { // a reply nobody will read
		t.Fatal(err)
	}
	if err := outOfStep.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := refused(outOfStep); !errors.Is(err, errUnexpectedRead) {
		t.Fatalf("a connection with an unread reply: %v, want %v", err, errUnexpectedRead)
	}

	m.Close()
	if err := refused(idle); !errors.Is(err, io.EOF) {
		t.Fatalf("a connection the server closed: %v, want io.EOF", err)
	}
}
