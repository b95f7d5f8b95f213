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

// errNoSocketCheck: the socket cannot be checked here (never on this platform).
var errNoSocketCheck = errors.New("redisstore: no socket check")

// socketAlive checks, without blocking, that an idle connection's socket is still open and
// holds no unread data (go-redis's check on every borrowed connection): one read that would
// block means alive, EOF means the server closed it.
func socketAlive(c net.Conn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errNoSocketCheck
	}
	// redigo leaves the last command's read deadline set; an expired one would fail the
	// check without looking at the socket.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var sockErr error
	err = raw.Read(func(fd uintptr) bool {
		var buf [1]byte
		n, err := syscall.Read(int(fd), buf[:])
		switch {
		case n == 0 && err == nil:
			sockErr = io.EOF
		case n > 0:
			sockErr = errUnexpectedRead
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
			sockErr = nil
		default:
			sockErr = err
		}
		return true
	})
	if err != nil {
		return err
	}
	return sockErr
}
