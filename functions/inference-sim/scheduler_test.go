package inferencesim

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lensfn/lensfn/functions/inference-sim/internal/openai"
)

// TestSchedulerHammer: many goroutines acquire and release with and
// without adapters; the running limit and the adapter-slot limit always
// hold, nobody is lost, and everything drains to zero.
func TestSchedulerHammer(t *testing.T) {
	const maxRunning, maxLoRAs = 4, 2
	s := newScheduler(maxRunning, 10000, maxLoRAs)
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
				if _, _, err := s.acquire(lora); err != nil {
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
				s.release(lora)
			}
		}()
	}
	wg.Wait()
	if v := violations.Load(); v > 0 {
		t.Fatalf("%d limit violations", v)
	}
	if r, w := s.counts(); r != 0 || w != 0 {
		t.Fatalf("left running %d waiting %d", r, w)
	}
}

func TestSchedulerShutdownRejectsWaiting(t *testing.T) {
	s := newScheduler(1, 5, 1)
	s.acquire("")
	done := make(chan *openai.Error, 1)
	go func() {
		_, _, err := s.acquire("")
		done <- err
	}()
	for {
		if _, w := s.counts(); w == 1 {
			break
		}
	}
	s.shutdown()
	if err := <-done; err == nil || err.Status != 503 {
		t.Fatalf("waiting request after shutdown: %v", err)
	}
	if _, _, err := s.acquire(""); err == nil || err.Status != 503 {
		t.Fatal("new request accepted after shutdown")
	}
}
