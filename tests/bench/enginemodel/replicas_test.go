package enginemodel

import (
	"context"
	"net"
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
)

// procCPU is a process's user + system CPU time from /proc (clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
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

// BenchmarkRealTimeReplicas: LENS_SIM_BIN (a built inference-sim) with 16 ranks in engine mode,
// each sent the "general" shared-prefix workload at LENS_ENGINE_RATE requests/s (default 20,
// the highest rate one H100 served Llama-2-7B at in the shipped measurements without overload)
// for LENS_ENGINE_SECONDS (default 30). It reports the simulator's cores (CPU seconds per second)
// and the tokens it streamed per second.
func BenchmarkRealTimeReplicas(b *testing.B) {
	bin := os.Getenv("LENS_SIM_BIN")
	if bin == "" {
		b.Skip("LENS_SIM_BIN names a built inference-sim")
	}
	const replicas, model = 16, "meta-llama/Llama-2-7b-hf"
	rate, seconds := 20.0, 30.0
	if v, err := strconv.ParseFloat(os.Getenv("LENS_ENGINE_RATE"), 64); err == nil {
		rate = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("LENS_ENGINE_SECONDS"), 64); err == nil {
		seconds = v
	}
	port := freePort(b, replicas)
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--model", model, "--latency-calculator", "engine",
		"--data-parallel-size", strconv.Itoa(replicas), "--max-num-seqs", "128", "--max-num-batched-tokens", "2048",
		"--max-model-len", "4096", "--seed", "1")
	cmd.Stderr = os.Stderr
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
		var wg sync.WaitGroup
		start := time.Now()
		// The steady window: from 5 s in (the engines filled) to the end of the arrivals.
		steady := make(chan float64, 1)
		go func() {
			time.Sleep(5 * time.Second)
			c0, t0 := procCPU(b, cmd.Process.Pid), time.Now()
			time.Sleep(time.Duration((seconds - 5) * float64(time.Second)))
			steady <- (procCPU(b, cmd.Process.Pid) - c0).Seconds() / time.Since(t0).Seconds()
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
		b.ReportMetric(<-steady, "sim-cores")
		b.ReportMetric(float64(tokens.Load())/time.Since(start).Seconds(), "tokens/s")
		b.ReportMetric(float64(failed.Load()), "failed")
	}
}
