package loadgen

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The collector's pace during a run. With GOGC at 100 the heap may grow by the live heap
// between collections; an open-loop run against a fast endpoint keeps little alive (tens of
// MB) and makes garbage at a steady ~3.5 KB per request, so at 5,000 requests a second it
// collects about once a second, and every concurrent mark takes a part of the two cores the
// dispatcher sends on, where a send scheduled inside it is late: with ~1 % of the run spent
// marking, that is where the schedule delay's p99 sits (BENCHMARKS.md, "Benchmark runs").
// Config.GCHeadroomBytes gives the heap at least that many bytes past the live heap before the
// next collection, by raising the GC percent while a run lasts; a large live heap (thousands of
// connections in flight) keeps the GOGC in force, so what a closed loop holds in memory does
// not grow, and a GOMEMLIMIT still bounds everything.

// gcPaceInterval is how often the pacer reads the live heap and adjusts the GC percent.
const gcPaceInterval = 100 * time.Millisecond

// maxPacedGCPercent bounds the raised percent (a nearly empty heap would ask for a huge one).
const maxPacedGCPercent = 10000

// gcPacer paces the process's collector for the runs that ask for headroom: the largest
// headroom among them wins, and the last run to end restores the percent it found.
type gcPacer struct {
	mu      sync.Mutex
	runs    map[*int64]struct{} // the headroom of each run using it
	base    int                 // the GC percent before the first run
	current int
	stop    chan struct{} // closed when the last run ends
}

// pacer is the process's one: the GC percent is the process's.
var pacer gcPacer

// paceGC applies headroom (bytes) while a run lasts; the returned func ends it.
func (p *gcPacer) paceGC(headroom int64) (release func()) {
	if headroom <= 0 {
		return func() {}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	mine := &headroom
	if len(p.runs) == 0 {
		p.base = gcPercent()
		if p.base < 0 { // GOGC=off: nothing to pace
			return func() {}
		}
		p.runs = map[*int64]struct{}{}
		p.current = p.base
		p.stop = make(chan struct{})
		go p.loop(p.stop)
	}
	p.runs[mine] = struct{}{}
	p.adjustLocked()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.runs, mine)
		if len(p.runs) == 0 {
			close(p.stop)
			debug.SetGCPercent(p.base)
			p.current = p.base
		}
	}
}

func (p *gcPacer) loop(stop chan struct{}) {
	tick := time.NewTicker(gcPaceInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		select {
		case <-stop: // the last run ended while this tick waited for the lock
		default:
			p.adjustLocked()
		}
		p.mu.Unlock()
	}
}

// adjustLocked sets the GC percent that gives the live heap the largest asked-for headroom,
// never below the percent the runs found; it changes it only when it moves by over a tenth.
func (p *gcPacer) adjustLocked() {
	var headroom int64
	for h := range p.runs {
		headroom = max(headroom, *h)
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	// At least the runtime's 4 MiB minimum heap, which it scales by the percent: a smaller floor
	// would give a nearly empty heap several times the headroom asked for.
	live := int64(4 << 20)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = max(live, int64(min(sample[0].Value.Uint64(), math.MaxInt64)))
	}
	want := max(p.base, int(min(100*headroom/live, maxPacedGCPercent)))
	if want != p.current && (want < p.current*10/11 || want > p.current*11/10 || want == p.base) {
		debug.SetGCPercent(want)
		p.current = want
	}
}

// gcPercent is the GC percent in force (-1 for GOGC=off), read without changing it: setting it
// to read it back would turn a GOGC=off process's collector on for a moment.
func gcPercent() int {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		p := debug.SetGCPercent(100) // a runtime without the metric
		debug.SetGCPercent(p)
		return p
	}
	if v := sample[0].Value.Uint64(); v <= math.MaxInt32 {
		return int(v)
	}
	return -1 // the runtime stores off (-1) as an int64, which the metric reads as a huge uint64
}
