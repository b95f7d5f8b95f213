// Package pacer waits for absolute deadlines on the monotonic clock with sub-millisecond
// precision (a timerfd on Linux, yields elsewhere), one shared goroutine however many streams
// wait: the simulator sends every token at its deadline through it (see pacer.go).
//
// It may import the standard library only.
package pacer
