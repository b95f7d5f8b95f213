//go:build unix

package redisstore

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

var errUnexpectedRead = errors.New("redisstore: unexpected data on an idle connection")

// errNoSocketCheck: the socket cannot be checked (not a plain TCP socket).
var errNoSocketCheck = errors.New("redisstore: no socket check")

// socketCheck looks, without blocking, at an idle connection's socket before it is lent out
// again: a read that would block means alive, EOF means the server closed it,
// data means the connection is out of step. Made once per connection (the raw connection and the
// read callback would otherwise be allocated on every borrow); used by one borrower at a time.
type socketCheck struct {
	conn   net.Conn
	raw    syscall.RawConn
	read   func(fd uintptr) bool
	result error
}

func newSocketCheck(c net.Conn) *socketCheck {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	check := &socketCheck{conn: c, raw: raw}
	check.read = func(fd uintptr) bool {
		var buf [1]byte
		n, err := syscall.Read(int(fd), buf[:])
		switch {
		case n == 0 && err == nil:
			check.result = io.EOF
		case n > 0:
			check.result = errUnexpectedRead
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
			check.result = nil
		default:
			check.result = err
		}
		return true
	}
	return check
}

func (c *socketCheck) alive() error {
	// redigo leaves the last command's read deadline set; an expired one would fail the
	// check without looking at the socket.
	if err := c.conn.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	if err := c.raw.Read(c.read); err != nil {
		return err
	}
	return c.result
}
