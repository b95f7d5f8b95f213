package engine

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// Scheduler admits requests: at most max-num-seqs run at once, the rest
// wait in a bounded FIFO queue (full queue: 429). A request for a LoRA
// adapter also needs one of max-loras adapter slots; a slot is free when
// its adapter has no running request. When a request finishes, waiting
// requests whose adapter is already loaded go first.
type Scheduler struct {
	mu         sync.Mutex
	maxRunning int
	maxWaiting int
	maxLoRAs   int
	running    int
	waiting    []*admission
	loaded     map[string]int // adapter -> running requests using it
	closed     bool

	onChange func(running, waiting int)
	onLoRA   func(running, waiting string)
}

// Hooks are told of every change under the scheduler's lock (keep them short): OnChange of
// the running and waiting counts (the vLLM gauges), OnLoRA of the running and waiting
// adapter sets (comma-joined, sorted; lora_requests_info). Either may be nil.
type Hooks struct {
	OnChange func(running, waiting int)
	OnLoRA   func(running, waiting string)
}

type admission struct {
	lora     string
	ready    chan struct{}
	running  int // running count when admitted (itself included)
	rejected bool
}

var admissionPool = sync.Pool{New: func() any { return &admission{ready: make(chan struct{}, 1)} }}

// NewScheduler admits at most maxRunning requests at once (--max-num-seqs), queues at most
// maxWaiting (--max-waiting-queue-length) and keeps at most maxLoRAs adapters loaded
// (--max-loras).
func NewScheduler(maxRunning, maxWaiting, maxLoRAs int, h Hooks) *Scheduler {
	s := &Scheduler{maxRunning: maxRunning, maxWaiting: maxWaiting, maxLoRAs: maxLoRAs,
		loaded: make(map[string]int), onChange: h.OnChange, onLoRA: h.OnLoRA}
	if s.onChange == nil {
		s.onChange = func(int, int) {}
	}
	return s
}

// Watch adds f to the OnChange hook of a running scheduler, after what it already calls
// (tests wait on it instead of sleeping); like the hook it runs under the lock and must not
// block.
func (s *Scheduler) Watch(f func(running, waiting int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.onChange
	s.onChange = func(running, waiting int) {
		before(running, waiting)
		f(running, waiting)
	}
}

func (s *Scheduler) changed() { s.onChange(s.running, len(s.waiting)) }

// canRun reports whether a request for lora may start now, loading the
// adapter (evicting an idle one if needed) when it may.
func (s *Scheduler) canRun(lora string, allowEvict bool) bool {
	if s.running >= s.maxRunning {
		return false
	}
	if lora == "" {
		return true
	}
	if _, ok := s.loaded[lora]; ok {
		return true
	}
	if len(s.loaded) < s.maxLoRAs {
		s.loaded[lora] = 0
		return true
	}
	if !allowEvict {
		return false
	}
	for name, n := range s.loaded {
		if n == 0 {
			delete(s.loaded, name)
			s.loaded[lora] = 0
			return true
		}
	}
	return false
}

func (s *Scheduler) start(lora string) int {
	s.running++
	if lora != "" {
		s.loaded[lora]++
	}
	return s.running
}

// Acquire blocks until a request for lora ("" for the base model) may run. It returns the
// number of running requests including this one and whether it had to wait. It gives up
// waiting (ErrClientLeft) when the channel returned by gone is closed; gone (may be nil) is
// called only when the request has to wait, so a request admitted at once never starts a
// watcher. Every successful Acquire is paired with one Release.
func (s *Scheduler) Acquire(lora string, gone func() <-chan struct{}) (running int, queued bool, err *openai.Error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, false, ErrShuttingDown
	}
	// With nobody waiting anything that fits may start; while others wait
	// (only possible when they are blocked on adapter slots), a request
	// may overtake them only without evicting an adapter.
	if s.canRun(lora, len(s.waiting) == 0) {
		r := s.start(lora)
		s.onChange(s.running, 0)
		if lora != "" {
			s.reportLoRA()
		}
		s.mu.Unlock()
		return r, false, nil
	}
	if len(s.waiting) >= s.maxWaiting {
		s.mu.Unlock()
		return 0, false, ErrQueueFull
	}
	a := admissionPool.Get().(*admission)
	a.lora, a.rejected = lora, false
	s.waiting = append(s.waiting, a)
	s.changed()
	if lora != "" {
		s.reportLoRA()
	}
	s.mu.Unlock()
	var left <-chan struct{}
	if gone != nil {
		left = gone()
	}
	select {
	case <-a.ready:
	case <-left:
		s.mu.Lock()
		if i := slices.Index(s.waiting, a); i >= 0 {
			s.waiting = slices.Delete(s.waiting, i, i+1)
			s.changed()
			if lora != "" {
				s.reportLoRA()
			}
			s.mu.Unlock()
			admissionPool.Put(a)
			return 0, true, ErrClientLeft
		}
		s.mu.Unlock()
		<-a.ready // admitted (or rejected) meanwhile: the send has happened
		if !a.rejected {
			s.Release(lora)
		}
		admissionPool.Put(a)
		return 0, true, ErrClientLeft
	}
	running, rejected := a.running, a.rejected
	admissionPool.Put(a)
	if rejected {
		return 0, true, ErrShuttingDown
	}
	return running, true, nil
}

// Release ends a running request and admits waiting ones.
func (s *Scheduler) Release(lora string) {
	s.mu.Lock()
	s.running--
	if lora != "" {
		if n, ok := s.loaded[lora]; ok && n > 0 {
			s.loaded[lora] = n - 1
		}
	}
	s.dispatch()
	s.changed()
	if lora != "" || len(s.waiting) > 0 {
		s.reportLoRA()
	}
	s.mu.Unlock()
}

func (s *Scheduler) dispatch() {
	for len(s.waiting) > 0 && s.running < s.maxRunning {
		i := slices.IndexFunc(s.waiting, func(a *admission) bool { return s.canRun(a.lora, false) })
		if i < 0 {
			i = slices.IndexFunc(s.waiting, func(a *admission) bool { return s.canRun(a.lora, true) })
		}
		if i < 0 {
			return
		}
		a := s.waiting[i]
		s.waiting = slices.Delete(s.waiting, i, i+1)
		a.running = s.start(a.lora)
		a.ready <- struct{}{}
	}
}

// Shutdown rejects waiting requests (ErrShuttingDown) and every later one.
func (s *Scheduler) Shutdown() {
	s.mu.Lock()
	s.closed = true
	for _, a := range s.waiting {
		a.rejected = true
		a.ready <- struct{}{}
	}
	s.waiting = nil
	s.changed()
	s.mu.Unlock()
}

// Counts are the running and waiting requests.
func (s *Scheduler) Counts() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, len(s.waiting)
}

// reportLoRA publishes the running and waiting adapter sets.
func (s *Scheduler) reportLoRA() {
	if s.onLoRA == nil {
		return
	}
	var run, wait []string
	for name, n := range s.loaded {
		if n > 0 {
			run = append(run, name)
		}
	}
	for _, a := range s.waiting {
		if a.lora != "" && !slices.Contains(wait, a.lora) {
			wait = append(wait, a.lora)
		}
	}
	sort.Strings(run)
	sort.Strings(wait)
	s.onLoRA(strings.Join(run, ","), strings.Join(wait, ","))
}

// The scheduler's answers, with the reference simulator's statuses and messages.
var (
	ErrShuttingDown = openai.NewError(503, "The server is shutting down")
	ErrQueueFull    = openai.NewError(429, "Failed to enqueue request, waiting requests queue is full")
	// ErrClientLeft ends a request whose client closed the connection; the
	// answer is never read (499 is nginx's "client closed request").
	ErrClientLeft = openai.NewError(499, "Client closed the connection before the answer was ready")
)
