package enginemodel

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/workload"
	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// simCPU is the simulator's CPU time so far.
func simCPU(b *testing.B, pid int) time.Duration {
	d, err := benchkit.ProcessCPUTime(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// generated is vllm:generation_tokens_total summed over the ranks' /metrics.
func generated(b *testing.B, port, ranks int) float64 {
	total := 0.0
	for r := 0; r < ranks; r++ {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port+r) + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "vllm:generation_tokens_total{") {
				v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				total += v
			}
		}
	}
	return total
}

func freePort(b *testing.B, n int) int {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := true
		for i := 1; i < n; i++ {
			if l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+i)); err != nil {
				ok = false
				break
			} else {
				l2.Close()
			}
		}
		if ok {
			return p
		}
	}
	b.Fatal("no free port range")
	return 0
}

// BenchmarkRealTimeReplicas: the simulator (LENS_SIM_BIN, else built here) with 16 ranks in engine mode,
// each sent the "general" shared-prefix workload at LENS_ENGINE_RATE requests/s (default 20,
// the highest rate one H100 served Llama-2-7B at in the shipped measurements without overload)
// for LENS_ENGINE_SECONDS (default 30), on LENS_SIM_GOMAXPROCS Ps when set. It reports the
// simulator's cores (CPU seconds per second), the tokens it streamed per second and the mean
// TTFT and TPOT its clients saw.
func BenchmarkRealTimeReplicas(b *testing.B) {
	bin := benchkit.SimulatorBinary(b)
	const replicas, model = 16, "meta-llama/Llama-2-7b-hf"
	rate := float64(benchkit.EnvInt(b, "LENS_ENGINE_RATE", 20))
	seconds := float64(benchkit.EnvInt(b, "LENS_ENGINE_SECONDS", 30))
	port := freePort(b, replicas)
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--model", model, "--latency-calculator", "engine",
		"--data-parallel-size", strconv.Itoa(replicas), "--max-num-seqs", "128", "--max-num-batched-tokens", "2048",
		"--max-model-len", "4096", "--seed", "1")
	cmd.Stderr = os.Stderr
	if procs := os.Getenv("LENS_SIM_GOMAXPROCS"); procs != "" {
		// The simulator alone on that many Ps (a Knative CPU limit sets it so), the load
		// generators in this process left on every core.
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+procs)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port+replicas-1)); err == nil {
			c.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	sp := &events.SharedPrefix{NumGroups: 10, NumPromptsPerGroup: 10, SystemPromptLen: 100, QuestionLen: 447, OutputLen: 248,
		Stages: []events.RateStage{{Rate: rate, Duration: seconds}}}
	for n := 0; n < b.N; n++ {
		var tokens, failed atomic.Int64
		var timingMu sync.Mutex
		var ttftSum, tpotSum float64 // over the successful requests, as their clients saw them
		var timed int
		var wg sync.WaitGroup
		start := time.Now()
		// The steady window: from 5 s in (the engines filled) to the end of the arrivals.
		// The simulator's CPU per token it generated there gives its cores at the full offered
		// load even when the load generators, on the same two cores, fall behind it.
		type window struct{ cores, usPerToken float64 }
		steady := make(chan window, 1)
		go func() {
			time.Sleep(5 * time.Second)
			c0, g0, t0 := simCPU(b, cmd.Process.Pid), generated(b, port, replicas), time.Now()
			time.Sleep(time.Duration((seconds - 5) * float64(time.Second)))
			cpu, gen := (simCPU(b, cmd.Process.Pid) - c0).Seconds(), generated(b, port, replicas)-g0
			steady <- window{cpu / time.Since(t0).Seconds(), cpu * 1e6 / max(gen, 1)}
		}()
		for r := 0; r < replicas; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cfg := loadgen.Config{BaseURL: "http://127.0.0.1:" + strconv.Itoa(port+r), Model: model, API: loadgen.APICompletions,
					Stream: true, IgnoreEOS: true, Seed: uint64(r + 1), RequestTimeout: 2 * time.Minute}
				_, err := loadgen.RunSchedule(context.Background(), cfg, workload.NewSharedPrefix(sp, uint64(r+1)),
					loadgen.SinkFunc(func(rec loadgen.Record) error {
						if rec.Successful {
							tokens.Add(int64(rec.OutputTokens))
							if rec.TTFTMs != nil && rec.TPOTMs != nil {
								timingMu.Lock()
								ttftSum, tpotSum, timed = ttftSum+*rec.TTFTMs, tpotSum+*rec.TPOTMs, timed+1
								timingMu.Unlock()
							}
						} else {
							failed.Add(1)
						}
						return nil
					}))
				if err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		w := <-steady
		offered := float64(replicas) * rate * float64(sp.OutputLen) // tokens/s at the offered load
		b.ReportMetric(w.cores, "sim-cores")
		b.ReportMetric(w.usPerToken, "sim-us/token")
		b.ReportMetric(w.usPerToken*offered/1e6, "sim-cores-at-offered-load")
		b.ReportMetric(float64(tokens.Load())/time.Since(start).Seconds(), "tokens/s")
		b.ReportMetric(float64(failed.Load()), "failed")
		// The engine's timing as its clients saw it: a simulator short of CPU starts steps late,
		// which shows here before anywhere else.
		b.ReportMetric(ttftSum/float64(max(timed, 1)), "client-ttft-ms")
		b.ReportMetric(tpotSum/float64(max(timed, 1)), "client-tpot-ms")
	}
}
