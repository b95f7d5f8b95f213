//go:build unix && !aix

package sockpeek

import (
	"crypto/tls"
	"io"
	"net"
	"syscall"
)

// Peeker looks at one connection's socket. It is made once per connection, so a look costs
// no allocation; one goroutine at a time may use it.
type Peeker struct {
	raw syscall.RawConn
	// look is handed to raw.Read on every call: built once in New, because a closure made per
	// call would be allocated per call.
	look func(fd uintptr) bool
	// block: the call waits for readability (Wait) rather than answering at once (Now).
	block bool
	state State
	err   error
	buf   [1]byte
}

// New returns a Peeker for c's socket, or nil when c has none to look at (not a
// syscall.Conn). A *tls.Conn is looked at through its TCP connection.
func New(c net.Conn) *Peeker {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &Peeker{raw: raw}
	p.look = func(fd uintptr) bool {
		p.peek(fd)
		return !p.block || p.state != Idle // false: the poller waits until the socket is readable
	}
	return p
}

// Now reports the socket's state without blocking.
func (p *Peeker) Now() State { return p.run(false) }

// Wait blocks until the socket is readable and reports Pending or Closed, or Interrupted when
// a read deadline (set before or during the wait) or this side's close ends the wait first.
func (p *Peeker) Wait() State { return p.run(true) }

// Err is the error behind the last call's Closed or Interrupted (io.EOF when the peer closed
// the connection), nil after Idle or Pending.
func (p *Peeker) Err() error { return p.err }

func (p *Peeker) run(block bool) State {
	p.block = block
	if err := p.raw.Read(p.look); err != nil {
		p.state, p.err = Interrupted, err
	}
	return p.state
}

// peek looks once, without blocking and without taking the byte it may find.
func (p *Peeker) peek(fd uintptr) {
	for {
		n, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			p.state, p.err = Idle, nil
		case err != nil:
			p.state, p.err = Closed, err
		case n == 0:
			p.state, p.err = Closed, io.EOF
		default:
			p.state, p.err = Pending, nil
		}
		return
	}
}
