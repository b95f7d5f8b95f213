package engine

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/openai"
)

// TestSchedulerHammer: many goroutines acquire and release with and
// without adapters; the running limit and the adapter-slot limit always
// hold, nobody is lost, and everything drains to zero.
func TestSchedulerHammer(t *testing.T) {
	const maxRunning, maxLoRAs = 4, 2
	s := NewScheduler(maxRunning, 10000, maxLoRAs, Hooks{})
	var running atomic.Int32
	var violations atomic.Int32
	loras := []string{"", "a", "b", "c"}
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				lora := loras[(g+i)%len(loras)]
				if _, _, err := s.Acquire(lora, nil); err != nil {
					t.Error(err)
					return
				}
				if n := running.Add(1); n > maxRunning {
					violations.Add(1)
				}
				s.mu.Lock()
				inUse := 0
				for _, n := range s.loaded {
					if n > 0 {
						inUse++
					}
				}
				if inUse > maxLoRAs || len(s.loaded) > maxLoRAs {
					violations.Add(1)
				}
				s.mu.Unlock()
				running.Add(-1)
				s.Release(lora)
			}
		}()
	}
	wg.Wait()
	if v := violations.Load(); v > 0 {
		t.Fatalf("%d limit violations", v)
	}
	if r, w := s.Counts(); r != 0 || w != 0 {
		t.Fatalf("left running %d waiting %d", r, w)
	}
}

func TestSchedulerShutdownRejectsWaiting(t *testing.T) {
	s := NewScheduler(1, 5, 1, Hooks{})
	s.Acquire("", nil)
	done := make(chan *openai.Error, 1)
	go func() {
		_, _, err := s.Acquire("", nil)
		done <- err
	}()
	for {
		if _, w := s.Counts(); w == 1 {
			break
		}
	}
	s.Shutdown()
	if err := <-done; err == nil || err.Status != 503 {
		t.Fatalf("waiting request after shutdown: %v", err)
	}
	if _, _, err := s.Acquire("", nil); err == nil || err.Status != 503 {
		t.Fatal("new request accepted after shutdown")
	}
}

// TestLoRASlots: with max-loras 1 a request for a second adapter waits
// until the first adapter has no running request.
func TestLoRASlots(t *testing.T) {
	sch := NewScheduler(10, 10, 1, Hooks{})
	if _, q, e := sch.Acquire("a", nil); e != nil || q {
		t.Fatal("first adapter must start at once")
	}
	done := make(chan bool, 1)
	go func() {
		_, queued, _ := sch.Acquire("b", nil)
		done <- queued
	}()
	select {
	case <-done:
		t.Fatal("second adapter started while the only slot is busy")
	case <-time.After(50 * time.Millisecond):
	}
	if _, q, _ := sch.Acquire("a", nil); q {
		t.Fatal("a request for the loaded adapter must not wait")
	}
	sch.Release("a")
	sch.Release("a")
	if queued := <-done; !queued {
		t.Fatal("b should report it waited")
	}
	if r, w := sch.Counts(); r != 1 || w != 0 {
		t.Fatalf("running %d waiting %d", r, w)
	}
}

// queueInOrder starts one goroutine per lora that Acquires and then reports its index,
// each only once the previous one is waiting, so the queue order is known.
func queueInOrder(t *testing.T, s *Scheduler, waiting <-chan int, loras ...string) <-chan int {
	t.Helper()
	admitted := make(chan int, len(loras))
	for i, lora := range loras {
		go func() {
			if _, queued, e := s.Acquire(lora, nil); e != nil || !queued {
				t.Errorf("request %d (%q): queued %v err %v, want a wait", i, lora, queued, e)
			}
			admitted <- i
		}()
		for w := range waiting {
			if w == i+1 {
				break
			}
		}
	}
	return admitted
}

// watchWaiting reports the waiting count of every change.
func watchWaiting(s *Scheduler) <-chan int {
	ch := make(chan int, 256)
	s.Watch(func(_, waiting int) { ch <- waiting })
	return ch
}

// TestAdmissionFIFO: requests for the base model wait in arrival order and are admitted
// in that order, one per release.
func TestAdmissionFIFO(t *testing.T) {
	s := NewScheduler(1, 10, 0, Hooks{})
	waiting := watchWaiting(s)
	if _, q, e := s.Acquire("", nil); e != nil || q {
		t.Fatal("the first request must start at once")
	}
	admitted := queueInOrder(t, s, waiting, "", "", "", "")
	for want := 0; want < 4; want++ {
		s.Release("")
		if got := <-admitted; got != want {
			t.Fatalf("admitted request %d, want %d (arrival order)", got, want)
		}
	}
	s.Release("")
	if r, w := s.Counts(); r != 0 || w != 0 {
		t.Fatalf("left running %d waiting %d", r, w)
	}
}

// TestAdmissionLoadedAdapterFirst: with one adapter slot, a waiting request for the loaded
// adapter goes before an earlier one that needs another adapter, which then evicts the
// idle one.
func TestAdmissionLoadedAdapterFirst(t *testing.T) {
	var sets []string
	s := NewScheduler(1, 10, 1, Hooks{OnLoRA: func(running, waiting string) { sets = append(sets, running+"|"+waiting) }})
	waiting := watchWaiting(s)
	if _, q, e := s.Acquire("a", nil); e != nil || q {
		t.Fatal("the first request must start at once")
	}
	admitted := queueInOrder(t, s, waiting, "b", "a")
	s.Release("a")
	if got := <-admitted; got != 1 {
		t.Fatalf("admitted request %d first, want the one for the loaded adapter a", got)
	}
	s.Release("a")
	if got := <-admitted; got != 0 {
		t.Fatalf("admitted request %d, want b's", got)
	}
	s.mu.Lock()
	_, aLoaded := s.loaded["a"]
	bRefs := s.loaded["b"]
	last := sets[len(sets)-1]
	s.mu.Unlock()
	if aLoaded || bRefs != 1 {
		t.Fatalf("b must have evicted the idle a: loaded %v", s.loaded)
	}
	if last != "b|" {
		t.Fatalf("last adapter sets %q, want b running, none waiting", last)
	}
	s.Release("b")
}

// TestAdmissionQueueBound: beyond max-waiting-queue-length a request is refused at once
// with 429, and a waiting request whose client left is removed from the queue.
func TestAdmissionQueueBound(t *testing.T) {
	s := NewScheduler(1, 1, 0, Hooks{})
	waiting := watchWaiting(s)
	s.Acquire("", nil)
	gone := make(chan struct{})
	left := make(chan error, 1)
	go func() {
		_, _, e := s.Acquire("", func() <-chan struct{} { return gone })
		left <- e
	}()
	for w := range waiting {
		if w == 1 {
			break
		}
	}
	if _, _, e := s.Acquire("", nil); e != ErrQueueFull || e.Status != 429 {
		t.Fatalf("full queue: %v, want 429", e)
	}
	close(gone)
	if e := <-left; e != ErrClientLeft {
		t.Fatalf("client left while waiting: %v", e)
	}
	if r, w := s.Counts(); r != 1 || w != 0 {
		t.Fatalf("after the client left: running %d waiting %d", r, w)
	}
}

// TestWatchAddsToTheHook: a listener added by Watch is told of each change after the
// OnChange hook, which keeps being called (the metrics gauges stay live under a test's watch).
func TestWatchAddsToTheHook(t *testing.T) {
	var calls []string
	s := NewScheduler(1, 1, 0, Hooks{OnChange: func(running, waiting int) {
		calls = append(calls, "hook "+strconv.Itoa(running)+"/"+strconv.Itoa(waiting))
	}})
	s.Watch(func(running, waiting int) {
		calls = append(calls, "watch "+strconv.Itoa(running)+"/"+strconv.Itoa(waiting))
	})
	if _, _, e := s.Acquire("", nil); e != nil {
		t.Fatal(e)
	}
	s.Release("")
	want := []string{"hook 1/0", "watch 1/0", "hook 0/0", "watch 0/0"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
}
