package loadgen

import (
	"runtime"
	"testing"
	"time"
)

// The dispatcher's waker never ends a wait early, also right after a wait whose timer fired
// late (its expiry is left to clear), and exists on Linux.
func TestWakerSleepsAtLeastTheWait(t *testing.T) {
	w := newWaker()
	if w == nil {
		if runtime.GOOS == "linux" {
			t.Fatal("no timerfd waker on Linux")
		}
		t.Skip("timers only on " + runtime.GOOS)
	}
	defer w.close()
	for _, d := range []time.Duration{50 * time.Microsecond, 300 * time.Microsecond, 1500 * time.Microsecond, time.Nanosecond} {
		for range 20 {
			start := time.Now()
			w.sleep(d)
			if took := time.Since(start); took < d {
				t.Fatalf("a wait of %s ended after %s", d, took)
			}
		}
	}
	// A timer that fired while nobody read it (the previous wait ended on its deadline).
	w.sleep(time.Microsecond)
	time.Sleep(2 * time.Millisecond) // any expiry of an armed timer has happened by now
	start := time.Now()
	w.sleep(time.Millisecond)
	if took := time.Since(start); took < time.Millisecond {
		t.Fatalf("a wait of 1ms after a stale expiry ended after %s", took)
	}
}
