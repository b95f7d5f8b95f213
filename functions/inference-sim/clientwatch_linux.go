package inferencesim

import (
	"net"
	"syscall"
)

// peekClosed blocks until the connection has something to read and
// reports whether that is its end (EOF or an error) rather than data. It
// returns false at once for a connection without a file descriptor and
// when a read deadline interrupts it.
func peekClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == syscall.EAGAIN || err == syscall.EINTR {
			return false // nothing yet: wait until the socket is readable
		}
		closed = n == 0 || err != nil
		return true
	})
	return err == nil && closed
}
