package pacer

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// hrTimer is a Linux timerfd read through Go's netpoller: the fine
// goroutine parks on it and epoll wakes it when the high-resolution timer
// expires, so sub-millisecond waits need no spinning and no blocked thread.
type hrTimer struct {
	f *os.File
}

const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

func newHRTimer() *hrTimer {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil
	}
	f := os.NewFile(fd, "Pacer-timerfd") // non-blocking: registered with the netpoller
	if f == nil {
		return nil
	}
	return &hrTimer{f: f}
}

// arm sets the timer to expire after d (at least 1 ns: zero disarms).
func (t *hrTimer) arm(d time.Duration) {
	d = max(d, time.Nanosecond)
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	rc, err := t.f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	})
}

// wait parks until the timer has expired.
func (t *hrTimer) wait() {
	var buf [8]byte
	t.f.Read(buf[:])
}
