//go:build linux

package router_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

const chatBody = `{"model":"fake-model","max_tokens":1,"messages":[{"role":"user","content":"Hello, how are you today?"}]}`

func waitHealthy(b *testing.B, base string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	b.Fatalf("%s never became healthy", base)
}

// startPinned starts bin as a child process, on CPU cpu when cpu >= 0 (taskset), and stops it
// when the benchmark ends.
func startPinned(b *testing.B, cpu int, bin string, args ...string) *exec.Cmd {
	if cpu >= 0 {
		args = append([]string{"-c", strconv.Itoa(cpu), bin}, args...)
		bin = "taskset"
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// BenchmarkAddedLatency sends the same zero-latency chat request open loop at a constant rate
// (LENS_ROUTER_RATE req/s for LENS_ROUTER_SECONDS) to a simulator process (LENS_SIM_BIN)
// directly, then through a router process (LENS_ROUTER_BIN, profile LENS_ROUTER_PROFILE,
// default random) in front of it, and reports both latency distributions, their difference,
// and what each process spent in CPU per request: the sender's own (this process, which does
// nothing else meanwhile), the simulator's and the router's. With LENS_ROUTER_PIN=1 the
// simulator runs on CPU 0 and the router on CPU 1 (taskset), the sender unpinned.
func BenchmarkAddedLatency(b *testing.B) {
	simBin := benchkit.SimulatorBinary(b)
	routerBin := benchkit.Binary(b, "LENS_ROUTER_BIN", "./functions/inference-router/cmd/inference-router")
	rate := benchkit.EnvInt(b, "LENS_ROUTER_RATE", 10000)
	seconds := benchkit.EnvInt(b, "LENS_ROUTER_SECONDS", 10)
	profile := os.Getenv("LENS_ROUTER_PROFILE")
	if profile == "" {
		profile = "random"
	}
	simCPU, routerCPU := -1, -1
	if os.Getenv("LENS_ROUTER_PIN") == "1" {
		if _, err := exec.LookPath("taskset"); err != nil {
			b.Fatal("LENS_ROUTER_PIN=1 needs taskset (util-linux)")
		}
		simCPU, routerCPU = 0, 1
	}
	simPort, routerPort := strconv.Itoa(benchkit.FreePort(b)), strconv.Itoa(benchkit.FreePort(b))
	simAddr, routerAddr := "127.0.0.1:"+simPort, "127.0.0.1:"+routerPort
	sim := startPinned(b, simCPU, simBin, "--model", "fake-model", "--port", simPort, "--max-num-seqs", "4096", "--seed", "1")
	waitHealthy(b, "http://"+simAddr)
	router := startPinned(b, routerCPU, routerBin, "--host", "127.0.0.1", "--port", routerPort, "--profile", profile,
		"--replicas", "http://"+simAddr, "--scrape-interval", "0", "--seed", "1")
	waitHealthy(b, "http://"+routerAddr)

	leg := func(addr string, d time.Duration) legResult {
		o, err := newOpenLoop(addr, "/v1/chat/completions", []byte(chatBody), rate, d)
		if err != nil {
			b.Fatal(err)
		}
		sim0, router0 := processCPU(b, sim.Process.Pid), processCPU(b, router.Process.Pid)
		res, err := o.run()
		if err != nil {
			b.Fatal(err)
		}
		return legResult{openLoopResult: res, simCPU: processCPU(b, sim.Process.Pid) - sim0, routerCPU: processCPU(b, router.Process.Pid) - router0}
	}
	// a second of the same load on each first: connections (the router's to the simulator
	// too) are open and both processes past their start before anything is measured
	leg(simAddr, time.Second)
	leg(routerAddr, time.Second)
	for b.Loop() {
		d := time.Duration(seconds) * time.Second
		direct := leg(simAddr, d)
		routed := leg(routerAddr, d)
		b.Log(direct.line("direct", rate, false))
		b.Log(routed.line("routed", rate, true))
		b.Logf("added latency (routed minus direct) p50 %.0f us, p99 %.0f us (target: p50 <= 100 us at 10,000 req/s)",
			benchkit.Percentile(routed.latencyUS, 50)-benchkit.Percentile(direct.latencyUS, 50),
			benchkit.Percentile(routed.latencyUS, 99)-benchkit.Percentile(direct.latencyUS, 99))
		for _, q := range []float64{50, 90, 99} {
			dq, rq := benchkit.Percentile(direct.latencyUS, q), benchkit.Percentile(routed.latencyUS, q)
			b.ReportMetric(dq, fmt.Sprintf("direct-p%.0f-us", q))
			b.ReportMetric(rq, fmt.Sprintf("routed-p%.0f-us", q))
			b.ReportMetric(rq-dq, fmt.Sprintf("added-p%.0f-us", q))
		}
		b.ReportMetric(direct.achieved, "direct-req/s")
		b.ReportMetric(routed.achieved, "routed-req/s")
		b.ReportMetric(routed.perRequestUS(routed.routerCPU), "router-cpu-us/req")
		b.ReportMetric(direct.perRequestUS(direct.cpu), "sender-cpu-us/req")
		b.ReportMetric(float64(direct.errors+routed.errors), "errors")
	}
}

type legResult struct {
	openLoopResult
	simCPU, routerCPU time.Duration
}

func (r legResult) perRequestUS(cpu time.Duration) float64 {
	if len(r.latencyUS) == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(len(r.latencyUS))
}

// line is one leg's figures, as BENCHMARKS.md quotes them.
func (r legResult) line(name string, rate int, routed bool) string {
	s := fmt.Sprintf("%s: asked %d req/s, achieved %.0f req/s, %d errors, %d connections; latency p50 %.0f us, p90 %.0f us, p99 %.0f us; "+
		"send lag p50 %.0f us, p99 %.0f us; CPU per request: sender %.1f us, simulator %.1f us",
		name, rate, r.achieved, r.errors, r.conns, benchkit.Percentile(r.latencyUS, 50), benchkit.Percentile(r.latencyUS, 90),
		benchkit.Percentile(r.latencyUS, 99), benchkit.Percentile(r.lagUS, 50), benchkit.Percentile(r.lagUS, 99),
		r.perRequestUS(r.cpu), r.perRequestUS(r.simCPU))
	if routed {
		s += fmt.Sprintf(", router %.1f us", r.perRequestUS(r.routerCPU))
	}
	return s
}

// processCPU is a child process's CPU time so far.
func processCPU(b *testing.B, pid int) time.Duration {
	d, err := benchkit.ProcessCPUTime(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
