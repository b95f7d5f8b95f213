package loadgen

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the percent in force, GOGC=off included, without setting it.
func TestGCPercentReadsTheSettingInForce(t *testing.T) {
	old := debug.SetGCPercent(250)
	defer debug.SetGCPercent(old)
	if got := gcPercent(); got != 250 {
		t.Fatalf("gcPercent() = %d after SetGCPercent(250)", got)
	}
	debug.SetGCPercent(-1)
	if got := gcPercent(); got != -1 {
		t.Fatalf("gcPercent() = %d with the collector off, want -1", got)
	}
	// Reading it must not have turned the collector back on.
	if prev := debug.SetGCPercent(-1); prev != -1 {
		t.Fatalf("the collector was turned back on (percent %d)", prev)
	}
}

// A nearly empty heap gets the headroom asked for, not several times it: the live heap is
// floored at the runtime's 4 MiB minimum, which the runtime scales by the percent.
func TestGCHeadroomOfASmallHeapIsNotMultiplied(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	var p gcPacer
	release := p.paceGC(64 << 20)
	got := gcPercent()
	release()
	// 64 MiB over a 4 MiB floor is 1600 %: a 4 MiB * 16 = 64 MiB minimum goal. The old 1 MiB
	// floor gave 6400 % (a 256 MiB goal).
	if got > 1600 {
		t.Fatalf("GC percent %d for 64 MiB of headroom on a small heap, want at most 1600", got)
	}
	if got <= 100 {
		t.Fatalf("GC percent %d: the headroom was not applied", got)
	}
}
