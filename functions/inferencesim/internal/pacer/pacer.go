package pacer

import (
	"container/heap"
	"runtime"
	"sync"
	"time"
)

// Timing strategy.
//
// Every delay is a wait for an absolute deadline on the monotonic clock, so
// a late wake-up shortens the next wait instead of shifting every later
// token (the reference's per-token sleeps accumulate their overshoot).
//
// Go's timers are exact while the process is busy (they are checked on
// every scheduling round) but an idle process sleeps in epoll, whose
// timeout has millisecond granularity: a 500 us sleep then lasts ~1.1 ms.
// The Pacer therefore sleeps on an ordinary timer until about a
// millisecond before the deadline and hands the remainder to one shared
// "fine" goroutine holding a heap of the imminent deadlines. On Linux it
// parks on a timerfd armed for the earliest deadline: epoll wakes it when
// the high-resolution timer fires (tens of microseconds of slack), so it
// costs no CPU while waiting. Elsewhere it yields (runtime.Gosched)
// between clock checks. Either way it is one goroutine however many
// streams are open.

// monoBase anchors monotonic offsets; Now is the offset of now.
var monoBase = time.Now()

func Now() time.Duration { return time.Since(monoBase) }

const (
	// fineWindow is the part of a wait handed to the fine goroutine.
	fineWindow = 1200 * time.Microsecond
)

type fineWaiter struct {
	deadline time.Duration
	done     chan struct{}
}

type waiterHeap []*fineWaiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h waiterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waiterHeap) Push(x any)        { *h = append(*h, x.(*fineWaiter)) }
func (h *waiterHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// Pacer waits for absolute deadlines with sub-millisecond precision.
type Pacer struct {
	mu      sync.Mutex
	waiters waiterHeap
	kick    chan struct{}
	pool    sync.Pool
	hr      *hrTimer      // nil: spin with yields
	armed   time.Duration // deadline the timerfd is armed for, 0 when idle
	// coarseOnly disables the fine goroutine (plain timer sleeps only).
	coarseOnly bool
}

func New(coarseOnly bool) *Pacer {
	p := &Pacer{kick: make(chan struct{}, 1), coarseOnly: coarseOnly}
	p.pool.New = func() any { return &fineWaiter{done: make(chan struct{}, 1)} }
	if !coarseOnly {
		p.hr = newHRTimer()
		go p.run()
	}
	return p
}

// waitUntil returns at (or just after) the monotonic offset deadline.
func (p *Pacer) WaitUntil(deadline time.Duration) {
	rem := deadline - Now()
	if rem <= 0 {
		return
	}
	if p.coarseOnly {
		time.Sleep(rem)
		return
	}
	if rem > fineWindow {
		time.Sleep(rem - fineWindow + 200*time.Microsecond)
		rem = deadline - Now()
		if rem <= 0 {
			return
		}
	}
	w := p.pool.Get().(*fineWaiter)
	w.deadline = deadline
	p.mu.Lock()
	heap.Push(&p.waiters, w)
	wasIdle := len(p.waiters) == 1 && p.armed == 0
	if !wasIdle && p.hr != nil && deadline < p.armed {
		p.armed = deadline
		p.hr.arm(deadline - Now())
	}
	p.mu.Unlock()
	if wasIdle || p.hr == nil {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	<-w.done
	p.pool.Put(w)
}

// run is the fine goroutine.
func (p *Pacer) run() {
	for {
		p.mu.Lock()
		if len(p.waiters) == 0 {
			p.mu.Unlock()
			<-p.kick
			continue
		}
		now := Now()
		for len(p.waiters) > 0 && p.waiters[0].deadline <= now {
			w := heap.Pop(&p.waiters).(*fineWaiter)
			w.done <- struct{}{}
		}
		if p.hr == nil {
			p.mu.Unlock()
			runtime.Gosched()
			continue
		}
		if len(p.waiters) == 0 {
			p.armed = 0
			p.mu.Unlock()
			continue
		}
		p.armed = p.waiters[0].deadline
		p.hr.arm(p.armed - now)
		p.mu.Unlock()
		p.hr.wait()
	}
}
