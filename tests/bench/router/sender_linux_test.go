//go:build linux

package router_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// openLoop is the benchmark's open-loop sender: rate requests a second on an absolute schedule
// (request i is due at start + i/rate, however late earlier ones were), each on an idle
// keep-alive connection (a new one is dialled when none is idle: the schedule never waits for
// an answer), one request per connection at a time (no pipelining). It is one goroutine on a
// locked OS thread running its own epoll loop over non-blocking sockets, so a request costs the
// sender one write, one read and a share of one epoll_pwait2 (whose nanosecond timeout is also
// the pacing: Go's timers wake at millisecond granularity on an idle process, which would send
// the schedule in bursts of ten). On two cores the sender shares the machine with what it
// measures, so it must cost as little as wrk does: net/http's client costs a goroutine hand-off
// and its connection's two goroutines per request.
type openLoop struct {
	addr     *net.TCPAddr
	request  []byte // the whole HTTP/1.1 request, built once
	rate     int    // requests per second
	count    int    // requests in the run
	maxConns int    // bound on connections (the sender's own, not the server's)
	preDial  int    // connections opened before the clock starts
	drain    time.Duration
}

// openLoopResult is one run: latency from the request's write to its answer's last byte,
// the schedule's lag (write minus due time: the sender's own delay) and the sender's CPU.
type openLoopResult struct {
	latencyUS []float64 // sorted, one per request answered 200
	lagUS     []float64 // sorted, one per request sent
	achieved  float64   // answered 200 per second of the run
	errors    int       // non-200 answers, broken connections, requests never answered
	conns     int       // connections used
	cpu       time.Duration
	elapsed   time.Duration
}

// newOpenLoop prepares a sender of a POST of body to http://addr+path.
func newOpenLoop(addr string, path string, body []byte, rate int, d time.Duration) (*openLoop, error) {
	tcp, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return nil, err
	}
	if rate <= 0 || d <= 0 {
		return nil, fmt.Errorf("rate %d and duration %s must be positive", rate, d)
	}
	count := int(int64(rate) * int64(d) / int64(time.Second))
	if count <= 0 || count > 5_000_000 {
		return nil, fmt.Errorf("%d requests: want 1 to 5,000,000", count)
	}
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, len(body))
	return &openLoop{addr: tcp, request: append(req, body...), rate: rate, count: count,
		maxConns: 4096, preDial: 64, drain: 10 * time.Second}, nil
}

// senderConn is one keep-alive connection and the answer being read on it.
type senderConn struct {
	fd   int
	buf  []byte // the answer so far (an answer must fit: the benchmark's are a few hundred bytes)
	n    int
	sent time.Duration // when its request was written, since the run's start
	busy bool
}

// maxAnswerBytes bounds one answer the sender reads.
const maxAnswerBytes = 64 << 10

// sysEpollPwait2 is epoll_pwait2(2)'s number, the same on every Linux architecture (5.11+).
const sysEpollPwait2 = 441

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK: the sender's thread wakes within 1 µs of its
// due time instead of the default 50 µs.
const prSetTimerSlack = 29

// run sends the schedule and waits up to o.drain after the last send for the answers.
func (o *openLoop) run() (res openLoopResult, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1000, 0)
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return res, err
	}
	defer syscall.Close(epfd)
	byFD := map[int]*senderConn{}
	var idle []*senderConn
	defer func() {
		for fd := range byFD {
			syscall.Close(fd)
		}
	}()
	dial := func() (*senderConn, error) {
		fd, err := o.dial(epfd)
		if err != nil {
			return nil, err
		}
		c := &senderConn{fd: fd, buf: make([]byte, maxAnswerBytes)}
		byFD[fd] = c
		return c, nil
	}
	drop := func(c *senderConn) {
		syscall.Close(c.fd)
		delete(byFD, c.fd)
		if i := slices.Index(idle, c); i >= 0 {
			idle = slices.Delete(idle, i, i+1)
		}
	}
	for range o.preDial {
		c, err := dial()
		if err != nil {
			return res, err
		}
		idle = append(idle, c)
	}
	res.latencyUS = make([]float64, 0, o.count)
	res.lagUS = make([]float64, 0, o.count)
	events := make([]syscall.EpollEvent, 256)
	interval := float64(time.Second) / float64(o.rate)
	due := func(i int) time.Duration { return time.Duration(float64(i) * interval) }
	cpu0 := benchkit.CPUTime()
	start := time.Now()
	next, inflight := 0, 0
	var lastSend time.Duration
	for {
		now := time.Since(start)
		for next < o.count && due(next) <= now {
			var c *senderConn
			if k := len(idle); k > 0 {
				c, idle = idle[k-1], idle[:k-1]
			} else if len(byFD) < o.maxConns {
				if c, err = dial(); err != nil {
					return res, err
				}
			} else {
				break // every connection is waiting on an answer: the lag shows it
			}
			c.sent = time.Since(start)
			if n, err := syscall.Write(c.fd, o.request); err != nil || n != len(o.request) {
				res.errors++ // a request that does not fit an empty socket buffer at once is a broken connection here
				drop(c)
			} else {
				c.busy = true
				inflight++
			}
			res.lagUS = append(res.lagUS, float64(c.sent-due(next))/1e3)
			lastSend = c.sent
			next++
		}
		if next == o.count && inflight == 0 {
			break
		}
		var wait time.Duration = -1
		if next < o.count && len(idle)+o.maxConns-len(byFD) > 0 {
			wait = max(due(next)-time.Since(start), 0)
		} else if next == o.count {
			left := o.drain - (time.Since(start) - lastSend)
			if left <= 0 {
				break
			}
			wait = left
		}
		k, err := epollWait(epfd, events, wait)
		if err != nil {
			return res, err
		}
		for _, ev := range events[:k] {
			c := byFD[int(ev.Fd)]
			if c == nil {
				continue
			}
			n, err := syscall.Read(c.fd, c.buf[c.n:])
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				if c.busy {
					res.errors++
					inflight--
				}
				drop(c)
				continue
			}
			c.n += n
			status, closeAfter, done, err := parseAnswer(c.buf[:c.n])
			if !done && err == nil && c.n == len(c.buf) {
				err = fmt.Errorf("an answer over %d bytes", maxAnswerBytes)
			}
			if err == nil && !done {
				continue
			}
			inflight--
			c.busy = false
			if err != nil || status != 200 {
				res.errors++
			} else {
				res.latencyUS = append(res.latencyUS, float64(time.Since(start)-c.sent)/1e3)
			}
			c.n = 0
			if err != nil || closeAfter {
				drop(c)
			} else {
				idle = append(idle, c)
			}
		}
	}
	res.elapsed = time.Since(start)
	res.cpu = benchkit.CPUTime() - cpu0
	res.errors += o.count - next + inflight // never sent, or never answered
	res.conns = len(byFD)
	res.achieved = float64(len(res.latencyUS)) / res.elapsed.Seconds()
	slices.Sort(res.latencyUS)
	slices.Sort(res.lagUS)
	return res, nil
}

// dial opens a keep-alive connection (blocking connect on loopback, then non-blocking,
// Nagle off as every HTTP client does) and registers it for reading.
func (o *openLoop) dial(epfd int) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	sa := &syscall.SockaddrInet4{Port: o.addr.Port}
	copy(sa.Addr[:], o.addr.IP.To4())
	for {
		if err = syscall.Connect(fd, sa); !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err == nil {
		err = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	}
	if err == nil {
		err = syscall.SetNonblock(fd, true)
	}
	if err == nil {
		err = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)})
	}
	if err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("connecting to %s: %w", o.addr, err)
	}
	return fd, nil
}

// epollWait waits for readable connections for at most wait (negative: no limit).
func epollWait(epfd int, events []syscall.EpollEvent, wait time.Duration) (int, error) {
	var ts *syscall.Timespec
	if wait >= 0 {
		t := syscall.NsecToTimespec(int64(wait))
		ts = &t
	}
	for {
		n, _, errno := syscall.Syscall6(sysEpollPwait2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)),
			uintptr(unsafe.Pointer(ts)), 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			if ts != nil {
				return 0, nil // the loop recomputes the timeout
			}
		default:
			return 0, fmt.Errorf("epoll_pwait2: %w", errno)
		}
	}
}

// parseAnswer reads an HTTP/1.1 answer framed by Content-Length (the only framing the
// benchmark's non-streamed answers use): its status, whether the server closes after it, and
// whether all of it is in buf. Bytes past the answer are an error (nothing was pipelined).
func parseAnswer(buf []byte) (status int, closeAfter, done bool, err error) {
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return 0, false, false, nil
	}
	head := buf[:end]
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, false, fmt.Errorf("not an HTTP/1.x status line: %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, false, false, fmt.Errorf("status line %q: %w", line, err)
	}
	size, closeAfter, err := headerFraming(rest)
	if err != nil {
		return 0, false, false, err
	}
	if size < 0 {
		return 0, false, false, errors.New("an answer without Content-Length")
	}
	total := end + 4 + size
	switch {
	case len(buf) < total:
		return status, closeAfter, false, nil
	case len(buf) > total:
		return 0, false, false, fmt.Errorf("%d bytes past the answer", len(buf)-total)
	}
	return status, closeAfter, true, nil
}

// headerFraming reads the framing of an HTTP/1.1 header block's fields (after the start line):
// the Content-Length (-1 when there is none) and whether Connection says close. Transfer-Encoding
// is an error: the sender and the lean responder frame by Content-Length only.
func headerFraming(fields []byte) (size int, closeAfter bool, err error) {
	size = -1
	for len(fields) > 0 {
		var field []byte
		field, fields, _ = bytes.Cut(fields, []byte("\r\n"))
		name, value, ok := bytes.Cut(field, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if size, err = strconv.Atoi(string(value)); err != nil || size < 0 {
				return 0, false, fmt.Errorf("Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, false, fmt.Errorf("Transfer-Encoding %q: only Content-Length framing is read here", value)
		case bytes.EqualFold(name, []byte("Connection")):
			closeAfter = bytes.EqualFold(value, []byte("close"))
		}
	}
	return size, closeAfter, nil
}
