//go:build linux

package loadgen

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// waker sleeps to a send time within microseconds instead of the millisecond Go's timers can
// miss it by: when the process is idle, the runtime waits for its next timer in epoll_wait,
// whose timeout counts whole milliseconds (a 0.3 ms sleep takes ~1 ms, a 1.5 ms one ~2 ms), and
// at 5,000 sends a second that alone put the open loop's schedule delay p90 at 1 ms. The waker
// arms a timerfd (a kernel hrtimer, no slack) that the runtime's poller watches, and sets the
// same moment as the file's read deadline, which is a runtime timer: an idle process wakes on
// the timerfd, a busy one (whose Ps check timers at every switch but poll the network less
// often) on the deadline, whichever comes first. Three system calls per wait; no spinning.
type waker struct {
	f  *os.File
	fd int
}

// newWaker returns a waker, or nil when the system offers no timerfd (waits then use timers).
func newWaker() *waker {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, 1 /* CLOCK_MONOTONIC */, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	// A non-blocking descriptor: os.NewFile hands it to the runtime's poller.
	return &waker{f: os.NewFile(fd, "timerfd"), fd: int(fd)}
}

// itimerspec is struct itimerspec: a one-shot timer when interval is zero.
type itimerspec struct {
	interval, value syscall.Timespec
}

// sleep waits about d (never less, unless the timer cannot be armed: the caller re-checks the
// time and waits again).
func (w *waker) sleep(d time.Duration) {
	var buf [8]byte
	// A timer that fired after the last wait ended on its deadline is still readable: clear it
	// first, or this wait would end at once.
	_, _ = syscall.Read(w.fd, buf[:])
	spec := itimerspec{value: syscall.NsecToTimespec(max(int64(d), 1))}
	if _, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(w.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
		return
	}
	if w.f.SetReadDeadline(time.Now().Add(d)) != nil {
		return
	}
	_, _ = w.f.Read(buf[:])
}

func (w *waker) close() { _ = w.f.Close() }
