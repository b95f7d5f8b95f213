//go:build !linux

package loadgen

import "time"

// waker is Linux's precise sleep (wake_linux.go); elsewhere waits use timers alone.
type waker struct{}

func newWaker() *waker { return nil }

func (w *waker) sleep(d time.Duration) { time.Sleep(d) }

func (w *waker) close() {}
