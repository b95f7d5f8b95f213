package evalrun_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// simModel is the model name the simulator serves.
const simModel = "sim"

// simulator is a simulator process on loopback.
type simulator struct {
	base string // http://127.0.0.1:PORT
	pid  int
}

// startSimulator starts a fresh simulator with zero latency and room for every request of a
// 4,096-wide closed loop, stopped when the benchmark ends.
func startSimulator(b *testing.B, extra ...string) *simulator {
	port := benchkit.FreePort(b)
	args := append([]string{"--model", simModel, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--seed", "1",
		"--max-num-seqs", "4096", "--max-waiting-queue-length", "100000", "--max-model-len", "4096"}, extra...)
	cmd := exec.Command(benchkit.SimulatorBinary(b), args...)
	// fasthttp logs every connection a client closes; the log is shown only when the benchmark fails.
	logPath := filepath.Join(b.TempDir(), "inference-sim.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if b.Failed() {
			raw, _ := os.ReadFile(logPath)
			b.Logf("--- simulator log (last 4 KiB) ---\n%s", raw[max(0, len(raw)-4096):])
		}
	})
	s := &simulator{base: fmt.Sprintf("http://127.0.0.1:%d", port), pid: cmd.Process.Pid}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(s.base + "/v1/models")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the simulator did not answer on %s: %v", s.base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// simCounters are the simulator's request counters and load gauges.
type simCounters struct {
	completed       float64 // vllm:e2e_request_latency_seconds_count: requests answered
	running, queued float64
}

// counters reads the simulator's /metrics (sums over label sets).
func (s *simulator) counters(b *testing.B) simCounters {
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		b.Fatalf("reading the simulator's /metrics: %v", err)
	}
	defer resp.Body.Close()
	var c simCounters
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			// Label values may hold spaces; the value is the last field.
			name = name[:i]
			rest = line[strings.LastIndexByte(line, ' ')+1:]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			continue
		}
		switch name {
		case "vllm:e2e_request_latency_seconds_count":
			c.completed += v
		case "vllm:num_requests_running":
			c.running += v
		case "vllm:num_requests_waiting":
			c.queued += v
		}
	}
	return c
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU is a process's CPU so far, user + system, from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: fields count from after ')'.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// procStatusKB is a /proc/PID/status field in kB (VmHWM: peak RSS, VmRSS: now).
func procStatusKB(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// loadAverage is /proc/loadavg's 1-minute figure, logged beside every result.
func loadAverage() float64 {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return math.NaN()
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func sortedCopy(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}

// checkFileLimit fails early when the process may not open the sockets a closed loop of n
// needs (one per connection, plus slack), naming the limit to raise.
func checkFileLimit(b *testing.B, n int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur < uint64(n)+256 && lim.Max >= uint64(n)+256 {
		lim.Cur = uint64(n) + 1024
		if lim.Cur > lim.Max {
			lim.Cur = lim.Max
		}
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if lim.Cur < uint64(n)+256 {
		b.Fatalf("open-file limit %d is too low for %d connections: raise it (ulimit -n %d)", lim.Cur, n, n+1024)
	}
}
