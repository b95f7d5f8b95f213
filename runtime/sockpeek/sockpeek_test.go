//go:build unix && !aix

package sockpeek_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/sockpeek"
)

// tcpPair returns both ends of a loopback TCP connection; the test's cleanup closes them.
func tcpPair(t *testing.T) (local, peer *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := <-accepted
	if p == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = c.Close(); _ = p.Close() })
	return c.(*net.TCPConn), p.(*net.TCPConn)
}

func newPeeker(t *testing.T, c net.Conn) *sockpeek.Peeker {
	t.Helper()
	p := sockpeek.New(c)
	if p == nil {
		t.Fatalf("New(%T) = nil, want a Peeker", c)
	}
	return p
}

// eventually looks with Now until it reports want: what the peer does reaches this end of a
// loopback connection a moment later.
func eventually(t *testing.T, p *sockpeek.Peeker, want sockpeek.State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := p.Now()
		if got == want {
			return
		}
		if got != sockpeek.Idle || time.Now().After(deadline) {
			t.Fatalf("Now() = %v (err %v), want %v", got, p.Err(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNowOnAnIdleConnection(t *testing.T) {
	local, _ := tcpPair(t)
	p := newPeeker(t, local)
	for range 3 {
		if got := p.Now(); got != sockpeek.Idle || p.Err() != nil {
			t.Fatalf("Now() = %v, %v; want idle, nil", got, p.Err())
		}
	}
}

// Data the peer sent is reported and left in place for the connection's reader.
func TestNowWithDataPendingLeavesTheData(t *testing.T) {
	local, peer := tcpPair(t)
	p := newPeeker(t, local)
	if _, err := peer.Write([]byte("xy")); err != nil {
		t.Fatal(err)
	}
	eventually(t, p, sockpeek.Pending)
	if got := p.Now(); got != sockpeek.Pending || p.Err() != nil {
		t.Fatalf("second look: %v, %v; want pending, nil", got, p.Err())
	}
	buf := make([]byte, 2)
	_ = local.SetReadDeadline(time.Now().Add(2 * time.Second)) // fail, not hang, when the peek took them
	if _, err := io.ReadFull(local, buf); err != nil || string(buf) != "xy" {
		t.Fatalf("read after the peeks: %q, %v; want \"xy\"", buf, err)
	}
	if got := p.Now(); got != sockpeek.Idle {
		t.Fatalf("after reading everything: %v, want idle", got)
	}
}

// The peer's end of the connection: its orderly close (FIN) or a reset (RST); bytes sent
// before a close are still there to read, so that connection is Pending, not Closed.
func TestNowAfterThePeerLeft(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leave   func(peer *net.TCPConn) error
		want    sockpeek.State
		wantErr error
	}{
		{"closed", func(peer *net.TCPConn) error { return peer.Close() }, sockpeek.Closed, io.EOF},
		{"reset", func(peer *net.TCPConn) error {
			if err := peer.SetLinger(0); err != nil { // close with RST
				return err
			}
			return peer.Close()
		}, sockpeek.Closed, syscall.ECONNRESET},
		{"closed after data", func(peer *net.TCPConn) error {
			if _, err := peer.Write([]byte("x")); err != nil {
				return err
			}
			return peer.Close()
		}, sockpeek.Pending, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local, peer := tcpPair(t)
			p := newPeeker(t, local)
			if err := tc.leave(peer); err != nil {
				t.Fatal(err)
			}
			eventually(t, p, tc.want)
			if err := p.Err(); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Err() = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// The poller's own answers: a read deadline already passed, or this side closed the connection.
func TestNowInterrupted(t *testing.T) {
	local, _ := tcpPair(t)
	p := newPeeker(t, local)
	_ = local.SetReadDeadline(time.Unix(1, 0))
	if got := p.Now(); got != sockpeek.Interrupted || !errors.Is(p.Err(), os.ErrDeadlineExceeded) {
		t.Fatalf("past read deadline: %v, %v; want interrupted, deadline exceeded", got, p.Err())
	}
	_ = local.SetReadDeadline(time.Time{})
	if got := p.Now(); got != sockpeek.Idle || p.Err() != nil {
		t.Fatalf("deadline cleared: %v, %v; want idle, nil", got, p.Err())
	}
	_ = local.Close()
	if got := p.Now(); got != sockpeek.Interrupted || !errors.Is(p.Err(), net.ErrClosed) {
		t.Fatalf("closed on this side: %v, %v; want interrupted, net.ErrClosed", got, p.Err())
	}
}

func TestNotASocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if p := sockpeek.New(a); p != nil {
		t.Fatal("New(net.Pipe end) is a Peeker, want nil")
	}
	if p := sockpeek.New(tls.Client(a, &tls.Config{})); p != nil {
		t.Fatal("New(TLS over a pipe) is a Peeker, want nil")
	}
}

// A TLS connection is looked at through its TCP connection (no handshake needed for that).
func TestTLSIsPeekedThroughItsTCPConnection(t *testing.T) {
	local, peer := tcpPair(t)
	p := newPeeker(t, tls.Client(local, &tls.Config{InsecureSkipVerify: true}))
	if got := p.Now(); got != sockpeek.Idle {
		t.Fatalf("Now() = %v, want idle", got)
	}
	_ = peer.Close()
	eventually(t, p, sockpeek.Closed)
}

// wait runs Wait in a goroutine and checks it is still blocked a little later.
func wait(t *testing.T, p *sockpeek.Peeker) <-chan sockpeek.State {
	t.Helper()
	done := make(chan sockpeek.State, 1)
	go func() { done <- p.Wait() }()
	select {
	case s := <-done:
		t.Fatalf("Wait returned %v (err %v) on an idle connection, want it to block", s, p.Err())
	case <-time.After(50 * time.Millisecond):
	}
	return done
}

func waited(t *testing.T, done <-chan sockpeek.State) sockpeek.State {
	t.Helper()
	select {
	case s := <-done:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return")
		return 0
	}
}

func TestWaitReturnsOnData(t *testing.T) {
	local, peer := tcpPair(t)
	p := newPeeker(t, local)
	done := wait(t, p)
	_, _ = peer.Write([]byte("x"))
	if got := waited(t, done); got != sockpeek.Pending {
		t.Fatalf("Wait() = %v (err %v), want pending", got, p.Err())
	}
	var b [1]byte
	if n, err := local.Read(b[:]); n != 1 || b[0] != 'x' {
		t.Fatalf("read after Wait: %q, %v; want \"x\"", b[:n], err)
	}
}

func TestWaitReturnsOnClose(t *testing.T) {
	local, peer := tcpPair(t)
	p := newPeeker(t, local)
	done := wait(t, p)
	_ = peer.Close()
	if got := waited(t, done); got != sockpeek.Closed || !errors.Is(p.Err(), io.EOF) {
		t.Fatalf("Wait() = %v, %v; want closed, io.EOF", got, p.Err())
	}
}

// A read deadline ends a wait, whether set during it (how the simulator stops its watcher) or
// before it; then the connection reads as usual.
func TestWaitInterruptedByAReadDeadline(t *testing.T) {
	local, peer := tcpPair(t)
	p := newPeeker(t, local)
	done := wait(t, p)
	_ = local.SetReadDeadline(time.Unix(1, 0))
	if got := waited(t, done); got != sockpeek.Interrupted || !errors.Is(p.Err(), os.ErrDeadlineExceeded) {
		t.Fatalf("deadline set during the wait: %v, %v; want interrupted, deadline exceeded", got, p.Err())
	}

	_ = local.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if got := waited(t, wait(t, p)); got != sockpeek.Interrupted || !errors.Is(p.Err(), os.ErrDeadlineExceeded) {
		t.Fatalf("deadline set before the wait: %v, %v; want interrupted, deadline exceeded", got, p.Err())
	}

	_ = local.SetReadDeadline(time.Time{})
	_, _ = peer.Write([]byte("x"))
	var b [1]byte
	if n, err := local.Read(b[:]); n != 1 || err != nil {
		t.Fatalf("read after the interrupted waits: %d, %v", n, err)
	}
}

// A look allocates nothing, so the Redis store's check of every borrowed connection and the
// load engine's of every reused one cost no garbage.
func TestNowAllocatesNothing(t *testing.T) {
	local, peer := tcpPair(t)
	p := newPeeker(t, local)
	if n := testing.AllocsPerRun(100, func() { p.Now() }); n != 0 {
		t.Errorf("Now() on an idle connection: %v allocations, want 0", n)
	}
	_, _ = peer.Write([]byte("x"))
	eventually(t, p, sockpeek.Pending)
	if n := testing.AllocsPerRun(100, func() { p.Now() }); n != 0 {
		t.Errorf("Now() with data pending: %v allocations, want 0", n)
	}
}

func BenchmarkNow(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p := sockpeek.New(c)
	b.ReportAllocs()
	for b.Loop() {
		if p.Now() != sockpeek.Idle {
			b.Fatal(p.Err())
		}
	}
}
