//go:build linux

package router_test

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

const chatBody = `{"model":"fake-model","max_tokens":1,"messages":[{"role":"user","content":"Hello, how are you today?"}]}`

func waitHealthy(tb testing.TB, base string) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	tb.Fatalf("%s never became healthy", base)
}

// startPinned starts bin as a child process with env added to this process's environment, on
// CPU cpu when cpu >= 0 (taskset), and stops it when the benchmark ends (or this process dies).
func startPinned(tb testing.TB, cpu int, env []string, bin string, args ...string) *exec.Cmd {
	tb.Helper()
	if cpu >= 0 {
		args = append([]string{"-c", strconv.Itoa(cpu), bin}, args...)
		bin = "taskset"
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// upstreamUnderTest is one upstream the router is measured in front of: its process and the
// router process in front of it.
type upstreamUnderTest struct {
	name         string // "simulator" or "lean"
	addr         string
	pid          int
	routerAddr   string
	routerPID    int
	upstreamPort int
}

// BenchmarkAddedLatency sends the same zero-latency chat request open loop at a constant rate
// (LENS_ROUTER_RATE req/s for LENS_ROUTER_SECONDS) to an upstream directly, then through a
// router process (LENS_ROUTER_BIN, profile LENS_ROUTER_PROFILE, default random) in front of it,
// and reports both latency distributions, their difference, and what each process spent in CPU
// per request: the sender's own (this process, which does nothing else meanwhile), the
// upstream's and the router's. The upstreams (LENS_ROUTER_UPSTREAMS, default "simulator,lean")
// are a simulator process (LENS_SIM_BIN) and the lean responder (responder_linux_test.go),
// which answers the bytes the simulator answered the same request at a fraction of its CPU, so
// that the router's hop is measured without the simulator's own ~60 µs per request competing
// for the two cores. With LENS_ROUTER_PIN=1 the upstreams run on CPU 0 and the routers on CPU 1
// (taskset), the sender unpinned. LENS_ROUTER_ARGS (space-separated flags) and
// LENS_ROUTER_PROCESS_ENV (space-separated NAME=value, e.g. GOGC=400) go to the routers only.
func BenchmarkAddedLatency(b *testing.B) {
	simBin := benchkit.SimulatorBinary(b)
	routerBin := benchkit.Binary(b, "LENS_ROUTER_BIN", "./functions/inferencerouter/cmd/inference-router")
	rate := benchkit.EnvInt(b, "LENS_ROUTER_RATE", 10000)
	seconds := benchkit.EnvInt(b, "LENS_ROUTER_SECONDS", 10)
	profile := cmp.Or(os.Getenv("LENS_ROUTER_PROFILE"), "random")
	names := strings.Split(cmp.Or(os.Getenv("LENS_ROUTER_UPSTREAMS"), "simulator,lean"), ",")
	routerArgs := strings.Fields(os.Getenv("LENS_ROUTER_ARGS"))
	routerEnv := strings.Fields(os.Getenv("LENS_ROUTER_PROCESS_ENV"))
	upstreamCPU, routerCPU := -1, -1
	if os.Getenv("LENS_ROUTER_PIN") == "1" {
		if _, err := exec.LookPath("taskset"); err != nil {
			b.Fatal("LENS_ROUTER_PIN=1 needs taskset (util-linux)")
		}
		upstreamCPU, routerCPU = 0, 1
	}
	const path = "/v1/chat/completions"
	simAddr := "127.0.0.1:" + strconv.Itoa(benchkit.FreePort(b))
	sim := startPinned(b, upstreamCPU, nil, simBin, "--model", "fake-model", "--port", strings.TrimPrefix(simAddr, "127.0.0.1:"),
		"--max-num-seqs", "4096", "--seed", "1")
	waitHealthy(b, "http://"+simAddr)
	var ups []*upstreamUnderTest
	for _, name := range names {
		u := &upstreamUnderTest{name: name}
		switch name {
		case "simulator":
			u.addr, u.pid = simAddr, sim.Process.Pid
		case "lean":
			responder, addr := startResponder(b, upstreamCPU, captureAnswer(b, simAddr, path, []byte(chatBody)))
			u.addr, u.pid = addr, responder.Process.Pid
		default:
			b.Fatalf("LENS_ROUTER_UPSTREAMS: %q is not simulator or lean", name)
		}
		u.upstreamPort, _ = strconv.Atoi(u.addr[strings.LastIndexByte(u.addr, ':')+1:])
		port := strconv.Itoa(benchkit.FreePort(b))
		router := startPinned(b, routerCPU, routerEnv, routerBin, append([]string{"--host", "127.0.0.1", "--port", port, "--profile", profile,
			"--replicas", "http://" + u.addr, "--scrape-interval", "0", "--seed", "1"}, routerArgs...)...)
		u.routerAddr, u.routerPID = "127.0.0.1:"+port, router.Process.Pid
		waitHealthy(b, "http://"+u.routerAddr)
		ups = append(ups, u)
	}

	leg := func(u *upstreamUnderTest, addr string, d time.Duration) legResult {
		o, err := newOpenLoop(addr, path, []byte(chatBody), rate, d)
		if err != nil {
			b.Fatal(err)
		}
		up0, router0 := processCPU(b, u.pid), processCPU(b, u.routerPID)
		host0 := hostCPU(b)
		res, err := o.run()
		if err != nil {
			b.Fatal(err)
		}
		r := legResult{openLoopResult: res, upstream: u.name, upstreamCPU: processCPU(b, u.pid) - up0, routerCPU: processCPU(b, u.routerPID) - router0,
			stealPercent: hostCPU(b).StealPercent(host0)}
		if addr == u.routerAddr {
			r.routerConns = establishedTo(b, u.upstreamPort)
		}
		return r
	}
	// a second of the same load on each first: connections (the router's to its upstream
	// too) are open and every process past its start before anything is measured
	for _, u := range ups {
		leg(u, u.addr, time.Second)
		leg(u, u.routerAddr, time.Second)
	}
	for b.Loop() {
		d := time.Duration(seconds) * time.Second
		for _, u := range ups {
			direct := leg(u, u.addr, d)
			routed := leg(u, u.routerAddr, d)
			b.Log(direct.line("direct", rate, false))
			b.Log(routed.line("routed", rate, true))
			steal := max(direct.stealPercent, routed.stealPercent)
			b.Logf("%s: added latency (routed minus direct) p50 %.0f us, p99 %.0f us, host steal up to %.1f %% (target: p50 <= 100 us at 10,000 req/s)", u.name,
				benchkit.Percentile(routed.latencyUS, 50)-benchkit.Percentile(direct.latencyUS, 50),
				benchkit.Percentile(routed.latencyUS, 99)-benchkit.Percentile(direct.latencyUS, 99), steal)
			b.ReportMetric(steal, u.name+"-max-steal-%")
			for _, q := range []float64{50, 90, 99} {
				dq, rq := benchkit.Percentile(direct.latencyUS, q), benchkit.Percentile(routed.latencyUS, q)
				b.ReportMetric(dq, fmt.Sprintf("%s-direct-p%.0f-us", u.name, q))
				b.ReportMetric(rq, fmt.Sprintf("%s-routed-p%.0f-us", u.name, q))
				b.ReportMetric(rq-dq, fmt.Sprintf("%s-added-p%.0f-us", u.name, q))
			}
			b.ReportMetric(direct.achieved, u.name+"-direct-req/s")
			b.ReportMetric(routed.achieved, u.name+"-routed-req/s")
			b.ReportMetric(routed.perRequestUS(routed.routerCPU), u.name+"-router-cpu-us/req")
			b.ReportMetric(direct.perRequestUS(direct.cpu), u.name+"-sender-cpu-us/req")
			b.ReportMetric(float64(direct.errors+routed.errors), u.name+"-errors")
		}
	}
}

// establishedTo counts this host's established IPv4 TCP connections whose remote port is port
// (/proc/net/tcp): after a routed leg, the router's pooled connections to its upstream (the
// sender's own ended with the direct leg).
func establishedTo(tb testing.TB, port int) int {
	tb.Helper()
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		tb.Fatal(err)
	}
	want := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[2], want) && f[3] == "01" {
			n++
		}
	}
	return n
}

type legResult struct {
	openLoopResult
	upstream               string
	upstreamCPU, routerCPU time.Duration
	routerConns            int     // the router's connections to its upstream after the leg (routed only)
	stealPercent           float64 // the host's CPU time stolen by other guests during the leg
}

func (r legResult) perRequestUS(cpu time.Duration) float64 {
	if len(r.latencyUS) == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(len(r.latencyUS))
}

// line is one leg's figures, as BENCHMARKS.md quotes them.
func (r legResult) line(name string, rate int, routed bool) string {
	s := fmt.Sprintf("%s %s: asked %d req/s, achieved %.0f req/s, %d errors, %d connections; latency p50 %.0f us, p90 %.0f us, p99 %.0f us; "+
		"send lag p50 %.0f us, p99 %.0f us; CPU per request: sender %.1f us, %s %.1f us",
		r.upstream, name, rate, r.achieved, r.errors, r.conns, benchkit.Percentile(r.latencyUS, 50), benchkit.Percentile(r.latencyUS, 90),
		benchkit.Percentile(r.latencyUS, 99), benchkit.Percentile(r.lagUS, 50), benchkit.Percentile(r.lagUS, 99),
		r.perRequestUS(r.cpu), r.upstream, r.perRequestUS(r.upstreamCPU))
	if routed {
		s += fmt.Sprintf(", router %.1f us; router's connections to the %s %d", r.perRequestUS(r.routerCPU), r.upstream, r.routerConns)
	}
	return s + fmt.Sprintf("; host steal %.1f %%", r.stealPercent)
}

// hostCPU reads the machine's CPU counters (for the steal share of a leg).
func hostCPU(b *testing.B) benchkit.HostCPU {
	h, err := benchkit.ReadHostCPU()
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// processCPU is a child process's CPU time so far.
func processCPU(b *testing.B, pid int) time.Duration {
	d, err := benchkit.ProcessCPUTime(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
