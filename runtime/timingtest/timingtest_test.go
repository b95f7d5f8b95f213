package timingtest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/timingtest"
)

// recorder is a testing.TB whose Fatal and Skip end the calling goroutine, as the real ones do,
// and remember how the test ended.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	ended  string // "fatal", "skip" or "" (passed)
	logs   []string
	reason string
}

func (r *recorder) Helper() {}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) end(how, msg string) {
	r.mu.Lock()
	r.ended, r.reason = how, msg
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any)                 { r.end("fatal", fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) { r.end("fatal", fmt.Sprintf(format, args...)) }
func (r *recorder) Skipf(format string, args ...any)  { r.end("skip", fmt.Sprintf(format, args...)) }

func retry(attempts int, allowed time.Duration, measure func() error) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		timingtest.Retry(r, attempts, allowed, measure)
	}()
	<-done
	return r
}

// contend keeps more threads busy than the machine has CPUs for d, so this process's threads
// queue for a CPU: the delay a loaded host causes.
func contend(d time.Duration) {
	n := 4 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A thread per goroutine, returned to the runtime after (a locked goroutine that
			// exits takes its thread, and the thread's counts, with it).
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for end := time.Now().Add(d); time.Now().Before(end); {
			}
		}()
	}
	wg.Wait()
}

func needSchedstat(t *testing.T) {
	if _, ok := timingtest.Start().Delay(); !ok {
		t.Skip("no schedstat on this system: the host's delay cannot be read")
	}
}

func TestAWindowSeesTheProcessWaitForACPU(t *testing.T) {
	needSchedstat(t)
	w := timingtest.Start()
	contend(200 * time.Millisecond)
	d, _ := w.Delay()
	// 4 threads per CPU for 200 ms: each waits about three quarters of the time.
	if d.CPUWait < 100*time.Millisecond {
		t.Fatalf("%s while %d threads shared %d CPUs for 200 ms", d, 4*runtime.NumCPU(), runtime.NumCPU())
	}
}

func TestAPassingMeasurementIsMeasuredOnce(t *testing.T) {
	calls := 0
	r := retry(3, time.Millisecond, func() error { calls++; return nil })
	if r.ended != "" || calls != 1 {
		t.Fatalf("ended %q after %d calls", r.ended, calls)
	}
}

func TestAFailureOnAQuietHostFailsAtOnce(t *testing.T) {
	needSchedstat(t)
	calls := 0
	// An hour of allowance: no host delays a no-op by that much, so the failure is the code's.
	r := retry(3, time.Hour, func() error { calls++; return errors.New("median 2ms, bound 1ms") })
	if r.ended != "fatal" || calls != 1 || !strings.Contains(r.reason, "median 2ms, bound 1ms") {
		t.Fatalf("ended %q after %d calls: %s", r.ended, calls, r.reason)
	}
}

func TestAWindowTheHostSpoiledIsMeasuredAgain(t *testing.T) {
	needSchedstat(t)
	calls := 0
	r := retry(3, time.Millisecond, func() error {
		calls++
		if calls == 1 {
			contend(100 * time.Millisecond)
			return errors.New("late")
		}
		return nil
	})
	if r.ended != "" || calls != 2 || len(r.logs) != 1 || !strings.Contains(r.logs[0], "waited") {
		t.Fatalf("ended %q after %d calls, logs %q", r.ended, calls, r.logs)
	}
}

func TestEveryWindowSpoiledSkipsRatherThanPasses(t *testing.T) {
	needSchedstat(t)
	calls := 0
	r := retry(2, time.Millisecond, func() error { calls++; contend(50 * time.Millisecond); return errors.New("late") })
	if r.ended != "skip" || calls != 2 || !strings.Contains(r.reason, "none measured the code") {
		t.Fatalf("ended %q after %d calls: %s", r.ended, calls, r.reason)
	}
}

func TestAWindowCountsTheProcessesItIsGiven(t *testing.T) {
	needSchedstat(t)
	// A child that keeps more threads busy than there are CPUs: its own waits, not this process's.
	if os.Getenv("TIMINGTEST_CONTEND") != "" {
		contend(300 * time.Millisecond)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAWindowCountsTheProcessesItIsGiven$")
	cmd.Env = append(os.Environ(), "TIMINGTEST_CONTEND=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := timingtest.Start(cmd.Process.Pid)
	time.Sleep(250 * time.Millisecond) // sample while the child still runs: a reaped child's counts are gone
	d, _ := w.Delay()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if d.CPUWait < 50*time.Millisecond {
		t.Fatalf("%s while the child kept %d threads busy on %d CPUs", d, 4*runtime.NumCPU(), runtime.NumCPU())
	}
}

func TestTheWindowCountsFromBegin(t *testing.T) {
	needSchedstat(t)
	calls := 0
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		timingtest.RetryTimed(r, nil, 3, 50*time.Millisecond, func(begin func()) error {
			calls++
			contend(100 * time.Millisecond) // the preparation: not what the bound is about
			begin()
			return errors.New("late")
		})
	}()
	<-done
	// The host's delay came before begin, so the failure is the code's: at once, no retry.
	if r.ended != "fatal" || calls != 1 {
		t.Fatalf("ended %q after %d calls: %s", r.ended, calls, r.reason)
	}
}
