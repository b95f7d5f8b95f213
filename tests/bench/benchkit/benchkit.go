package benchkit

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// SimulatorBinary returns LENS_SIM_BIN when set (tests/bench/run.sh builds it once), else builds
// the simulator into the benchmark's temporary directory.
func SimulatorBinary(tb testing.TB) string {
	return Binary(tb, "LENS_SIM_BIN", "./functions/inferencesim/cmd/inference-sim")
}

// Binary returns the path the environment variable env names when set, else builds the main
// package pkg (a path from the repository root, "./functions/NAME/cmd/NAME") into the
// benchmark's temporary directory.
func Binary(tb testing.TB, env, pkg string) string {
	if bin := os.Getenv(env); bin != "" {
		return bin
	}
	root := wasmtest.RepoRoot(tb)
	bin := filepath.Join(tb.TempDir(), filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// FreePort is a loopback TCP port nothing listens on now.
func FreePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// EnvInt reads a positive integer knob, def when unset.
func EnvInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// EnvDuration reads a positive duration knob, def when unset.
func EnvDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// Percentile is the nearest-rank percentile of sorted values (NOTES.md's definition); NaN
// when there are none.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(float64(len(sorted))*p/100)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// CPUTime is the CPU this process has used, user + system (getrusage), to show a client's own
// cost per request apart from how busy the shared machine is.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcessCPUTime is the CPU another process has used so far, user + system (utime and stime of
// /proc/PID/stat, in the kernel's fixed 100 Hz USER_HZ ticks): what a server under the
// benchmark's load spent, apart from the machine's other work.
func ProcessCPUTime(pid int) (time.Duration, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// the command name (field 2) may hold spaces and parentheses: fields count from its last ')'
	i := bytes.LastIndexByte(stat, ')')
	var fields []string
	if i >= 0 {
		fields = strings.Fields(string(stat[i+1:]))
	}
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	const userHZ = 100
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// HostCPU is a reading of the machine's CPU time counters (the "cpu" line of /proc/stat, in
// USER_HZ ticks): busy, idle and steal summed over all cores.
type HostCPU struct{ total, steal int64 }

// ReadHostCPU reads the machine's counters now.
func ReadHostCPU() (HostCPU, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostCPU{}, err
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := strings.Fields(string(line))
	// cpu user nice system idle iowait irq softirq steal [guest guest_nice: inside user already]
	if len(fields) < 9 || fields[0] != "cpu" {
		return HostCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var h HostCPU
	for i, f := range fields[1:9] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return HostCPU{}, fmt.Errorf("/proc/stat: field %d %q", i+1, f)
		}
		h.total += v
		if i == 7 {
			h.steal = v
		}
	}
	return h, nil
}

// StealPercent is the share of the machine's CPU time between since and h that the hypervisor
// gave to other guests (steal): on a shared VM, a leg measured while it was high measured the
// neighbours (every process's latency queues, direct legs too), not the code under test.
func (h HostCPU) StealPercent(since HostCPU) float64 {
	if h.total <= since.total {
		return 0
	}
	return 100 * float64(h.steal-since.steal) / float64(h.total-since.total)
}
