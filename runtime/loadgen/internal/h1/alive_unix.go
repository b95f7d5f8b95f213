//go:build unix

package h1

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// alive reports whether an idle connection is still open: nothing to read (EAGAIN) means the
// server has neither closed it nor sent bytes out of turn. One non-blocking peek, so a
// connection the server closed while idle is not written a request that then fails. Under TLS
// pending bytes may be a record the TLS layer reads itself (a TLS 1.3 session ticket), so only
// the server's close counts there.
func alive(nc net.Conn) bool {
	secure := false
	if tc, ok := nc.(*tls.Conn); ok {
		nc, secure = tc.NetConn(), true
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr != nil:
			ok = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		case n > 0:
			ok = secure
		}
		return true // never wait for readiness
	})
	return err == nil && ok
}
