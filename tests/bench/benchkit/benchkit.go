package benchkit

import (
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/wasmhost/wasmtest"
)

// SimulatorBinary returns LENS_SIM_BIN when set (tests/bench/run.sh builds it once), else builds
// the simulator into the benchmark's temporary directory.
func SimulatorBinary(tb testing.TB) string {
	if bin := os.Getenv("LENS_SIM_BIN"); bin != "" {
		return bin
	}
	root := wasmtest.RepoRoot(tb)
	bin := filepath.Join(tb.TempDir(), "inference-sim")
	build := exec.Command("go", "build", "-o", bin, "./functions/inference-sim/cmd/inference-sim")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building the simulator: %v\n%s", err, out)
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
