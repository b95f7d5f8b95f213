//go:build linux

package router_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// The lean responder is the benchmark's stand-in upstream: a separate process (this test
// binary run again with responderListenEnv set, so it can be pinned and its CPU read from /proc
// like the simulator's) that answers every HTTP/1.1 request on its listener with the same bytes,
// captured once from the simulator's answer to the benchmark's request. It is one epoll loop on
// a locked OS thread over non-blocking sockets, like the sender: a request costs it one read, one
// write and a share of one epoll_wait (23-36 µs of CPU at 10,000 req/s on the loaded 2-core host,
// about what the sender costs, nearly all of it the kernel's loopback work and the wake-up),
// where the simulator also tokenizes, schedules and encodes an answer (46-67 µs), work the
// router's added latency does not depend on.
// Measuring a proxy's hop against such a canned upstream is how proxy benchmarks isolate it;
// the simulator legs stay beside it (the upstream the router really fronts).
const (
	responderListenEnv = "LENS_ROUTER_RESPONDER_LISTEN" // host:port to listen on
	responderAnswerEnv = "LENS_ROUTER_RESPONDER_ANSWER" // file holding the whole answer (status line to body)
)

// TestMain runs the lean responder instead of the tests when this binary was started as one.
func TestMain(m *testing.M) {
	if addr := os.Getenv(responderListenEnv); addr != "" {
		answer, err := os.ReadFile(os.Getenv(responderAnswerEnv))
		if err == nil {
			err = serveCanned(addr, answer)
		}
		fmt.Fprintln(os.Stderr, "lean responder:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// maxRequestBytes bounds one request the responder buffers (the benchmark's are ~250 bytes,
// the router's health probes less).
const maxRequestBytes = 64 << 10

// cannedConn is one client connection and the request bytes read on it so far.
type cannedConn struct {
	buf []byte
	n   int
}

// serveCanned answers every request on addr with answer until the process is killed. A request
// with Connection: close is answered and its connection closed; one the responder cannot frame
// (chunked, oversized, not HTTP) closes its connection unanswered; an answer that does not fit
// the socket's buffer at once (never for one small answer per request) closes it too.
func serveCanned(addr string, answer []byte) error {
	if status, _, done, err := parseAnswer(answer); err != nil || !done || status != 200 {
		return fmt.Errorf("the canned answer is not one whole 200 answer (status %d, whole %v, %v)", status, done, err)
	}
	runtime.LockOSThread()
	lfd, err := listenTCP4(addr)
	if err != nil {
		return err
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, lfd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return err
	}
	conns := map[int]*cannedConn{}
	drop := func(fd int) {
		syscall.Close(fd) // closing removes it from the epoll set
		delete(conns, fd)
	}
	events := make([]syscall.EpollEvent, 256)
	var out []byte
	for {
		k, err := syscall.EpollWait(epfd, events, -1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:k] {
			fd := int(ev.Fd)
			if fd == lfd {
				if err := acceptAll(lfd, epfd, conns); err != nil {
					return err
				}
				continue
			}
			c := conns[fd]
			if c == nil {
				continue
			}
			n, err := syscall.Read(fd, c.buf[c.n:])
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				drop(fd)
				continue
			}
			c.n += n
			out = out[:0]
			consumed, closeAfter := 0, false
			for !closeAfter {
				size, cl, err := requestSize(c.buf[consumed:c.n])
				if err != nil {
					closeAfter = true
					break
				}
				if size == 0 {
					break
				}
				consumed += size
				closeAfter = cl
				out = append(out, answer...)
			}
			if consumed == 0 && c.n == len(c.buf) {
				closeAfter = true // a request over maxRequestBytes
			}
			c.n = copy(c.buf, c.buf[consumed:c.n])
			if len(out) > 0 {
				if w, err := syscall.Write(fd, out); err != nil || w != len(out) {
					closeAfter = true
				}
			}
			if closeAfter {
				drop(fd)
			}
		}
	}
}

// listenTCP4 is a non-blocking listening socket on addr.
func listenTCP4(addr string) (int, error) {
	tcp, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return -1, err
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	sa := &syscall.SockaddrInet4{Port: tcp.Port}
	copy(sa.Addr[:], tcp.IP.To4())
	if err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err == nil {
		if err = syscall.Bind(fd, sa); err == nil {
			err = syscall.Listen(fd, 4096)
		}
	}
	if err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return fd, nil
}

// acceptAll accepts every pending connection (Nagle off, as the answer goes out in one write)
// and registers it for reading.
func acceptAll(lfd, epfd int, conns map[int]*cannedConn) error {
	for {
		fd, _, err := syscall.Accept4(lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return nil
		case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.ECONNABORTED):
			continue
		case err != nil:
			return fmt.Errorf("accept: %w", err)
		}
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
			syscall.Close(fd)
			continue
		}
		conns[fd] = &cannedConn{buf: make([]byte, maxRequestBytes)}
	}
}

// requestSize frames the first HTTP/1.1 request in buf: its length with its Content-Length
// body (0 while it is incomplete) and whether it asks to close the connection after.
func requestSize(buf []byte) (size int, closeAfter bool, err error) {
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return 0, false, nil
	}
	line, rest, _ := bytes.Cut(buf[:end], []byte("\r\n"))
	if !bytes.Contains(line, []byte(" HTTP/1.")) {
		return 0, false, fmt.Errorf("not an HTTP/1.x request line: %q", line)
	}
	body, closeAfter, err := headerFraming(rest)
	if err != nil {
		return 0, false, err
	}
	if body > maxRequestBytes {
		return 0, false, fmt.Errorf("a body of %d bytes: at most %d", body, maxRequestBytes)
	}
	body = max(body, 0)
	if total := end + 4 + body; len(buf) >= total {
		return total, closeAfter, nil
	}
	return 0, false, nil
}

// captureAnswer sends the benchmark's request once to addr and returns the whole answer as it
// came (status line, headers, body): what the lean responder then answers every request with.
func captureAnswer(tb testing.TB, addr, path string, body []byte) []byte {
	tb.Helper()
	conn, err := net.DialTimeout("tcp4", addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, addr, len(body), body)
	if _, err := conn.Write(req); err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, maxAnswerBytes)
	for n := 0; ; {
		k, err := conn.Read(buf[n:])
		n += k
		status, closeAfter, done, perr := parseAnswer(buf[:n])
		switch {
		case perr != nil:
			tb.Fatalf("capturing the answer of %s: %v", addr, perr)
		case done && (status != 200 || closeAfter):
			tb.Fatalf("capturing the answer of %s: status %d, close %v: want a keep-alive 200", addr, status, closeAfter)
		case done:
			return bytes.Clone(buf[:n])
		case err != nil:
			tb.Fatalf("capturing the answer of %s: %v after %d bytes", addr, err, n)
		case n == len(buf):
			tb.Fatalf("capturing the answer of %s: over %d bytes", addr, maxAnswerBytes)
		}
	}
}

// startResponder starts a lean responder process answering answer (on CPU cpu when cpu >= 0)
// and returns it and its address once it answers.
func startResponder(tb testing.TB, cpu int, answer []byte) (*exec.Cmd, string) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(tb.TempDir(), "answer.http")
	if err := os.WriteFile(file, answer, 0o600); err != nil {
		tb.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(benchkit.FreePort(tb))
	cmd := startPinned(tb, cpu, []string{responderListenEnv + "=" + addr, responderAnswerEnv + "=" + file}, exe, "-test.run=^$")
	waitHealthy(tb, "http://"+addr)
	return cmd, addr
}
