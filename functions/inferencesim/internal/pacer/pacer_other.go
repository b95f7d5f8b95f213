//go:build !linux

package pacer

import "time"

// hrTimer is Linux-only; elsewhere the fine goroutine spins with yields.
type hrTimer struct{}

func newHRTimer() *hrTimer           { return nil }
func (t *hrTimer) arm(time.Duration) {}
func (t *hrTimer) wait()             {}
