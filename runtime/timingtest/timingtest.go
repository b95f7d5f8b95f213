package timingtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Delay is what the host took from the processes a window watches: the time their threads were
// runnable but waiting for a CPU (summed over the threads, so it can exceed the window), and the
// time the hypervisor ran something else on the machine's CPUs (steal, at the kernel's tick
// granularity).
type Delay struct {
	CPUWait, Steal time.Duration
}

func (d Delay) String() string {
	return fmt.Sprintf("waited %v for a CPU, %v stolen", d.CPUWait.Round(time.Microsecond), d.Steal)
}

// Total is the delay either way.
func (d Delay) Total() time.Duration { return d.CPUWait + d.Steal }

// Window measures the host's delay from its start.
type Window struct {
	pids  []string
	waits []time.Duration // per process at the start; -1: not readable
	steal time.Duration
}

// Start opens a window over this process and the processes pids (those the measurement depends
// on: a server it started, say). A process not readable at both ends of the window is left out.
func Start(pids ...int) Window {
	w := Window{pids: []string{"self"}}
	for _, pid := range pids {
		w.pids = append(w.pids, strconv.Itoa(pid))
	}
	w.waits = w.sample()
	w.steal = steal()
	return w
}

// Delay is the host's delay since Start; ok is false where it cannot be read (not Linux, no
// schedstat): then every failure counts.
func (w Window) Delay() (Delay, bool) {
	now := w.sample()
	if w.waits[0] < 0 || now[0] < 0 {
		return Delay{}, false
	}
	var d Delay
	for i := range now {
		if w.waits[i] >= 0 && now[i] >= 0 {
			d.CPUWait += max(now[i]-w.waits[i], 0)
		}
	}
	d.Steal = max(steal()-w.steal, 0)
	return d, true
}

// Retry runs measure, whose error is a failed timing assertion, until it passes. A window that
// failed while the host delayed this process by more than allowed (the slack of the bound being
// checked) is not evidence against the code and is measured again, up to attempts windows; a
// window that failed while the host did not delay it that much fails the test at once: the code
// missed its bound on its own. When every window was spoiled the test is skipped, saying so: no
// measurement could be made, which is not a pass.
func Retry(t testing.TB, attempts int, allowed time.Duration, measure func() error) {
	t.Helper()
	RetryWith(t, nil, attempts, allowed, measure)
}

// RetryWith is Retry counting the delay of the processes pids as well (their threads' waits
// add up with this process's).
func RetryWith(t testing.TB, pids []int, attempts int, allowed time.Duration, measure func() error) {
	t.Helper()
	RetryTimed(t, pids, attempts, allowed, func(func()) error { return measure() })
}

// RetryTimed is RetryWith for a measurement that prepares before the timed part: measure calls
// begin when the part its bound is about begins (the window then counts from there; without a
// call it covers all of measure).
func RetryTimed(t testing.TB, pids []int, attempts int, allowed time.Duration, measure func(begin func()) error) {
	t.Helper()
	var spoiled []string
	for range max(attempts, 1) {
		w := Start(pids...)
		err := measure(func() { w = Start(pids...) })
		if err == nil {
			return
		}
		d, ok := w.Delay()
		if !ok || d.Total() <= allowed {
			if ok {
				t.Fatalf("%v (the host %s during the measurement, within the %v the bound allows)", err, d, allowed)
			}
			t.Fatal(err)
		}
		spoiled = append(spoiled, fmt.Sprintf("%v (the host %s)", err, d))
		t.Logf("timing window spoiled by the host, measuring again: %s", spoiled[len(spoiled)-1])
	}
	t.Skipf("the host delayed every one of %d timing windows by more than the %v the bound allows, so none measured the code: %s",
		len(spoiled), allowed, strings.Join(spoiled, "; "))
}

// userHz is the unit of /proc/stat (USER_HZ, 100 on every Linux ABI Go supports).
const userHz = 100

// sample reads each process's CPU wait (-1 where it cannot be read).
func (w Window) sample() []time.Duration {
	out := make([]time.Duration, len(w.pids))
	for i, pid := range w.pids {
		wait, ok := cpuWait(pid)
		if !ok {
			wait = -1
		}
		out[i] = wait
	}
	return out
}

// cpuWait sums the run-queue wait (the second field of schedstat, in ns) of every thread of
// process pid ("self" or a number). A thread that exits takes its count with it, which only
// under-reports; Go keeps its threads (it ends one only when a goroutine locked to it exits).
func cpuWait(pid string) (time.Duration, bool) {
	tasks, err := filepath.Glob("/proc/" + pid + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total time.Duration
	read := 0
	for _, path := range tasks {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the thread exited
		}
		fields := strings.Fields(string(raw))
		if len(fields) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		total += time.Duration(ns)
		read++
	}
	return total, read > 0
}

// steal is the machine's steal time so far (the eighth value of /proc/stat's cpu line); 0 when
// unreadable.
func steal() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0
	}
	ticks, err := strconv.ParseInt(fields[8], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ticks) * time.Second / userHz
}
