package replay_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// BenchmarkReplayConstantRate replays LENS_REPLAY_RATE requests/s (default 2000) for
// LENS_REPLAY_SECONDS (default 30) against the simulator with zero latency, streaming chat
// with 4 output tokens, every record written to a JSONL file. Run it with -benchtime=1x; each
// iteration is one whole replay. Metrics: drift (started - scheduled) percentiles in ms, the
// achieved send rate ((n-1) / (last send - first send)) and its error against the schedule.
func BenchmarkReplayConstantRate(b *testing.B) {
	rate := benchkit.EnvInt(b, "LENS_REPLAY_RATE", 2000)
	seconds := benchkit.EnvInt(b, "LENS_REPLAY_SECONDS", 30)
	base := startTarget(b)
	n := rate * seconds
	schedule := make([]loadgen.Request, n)
	for i := range schedule {
		at := float64(i) * 1000 / float64(rate)
		schedule[i] = loadgen.Request{ArrivalMs: &at, InputTokens: 32, HashIDs: []int64{int64(i % 8), int64(i)}, BlockSize: 16, OutputTokens: 4}
	}
	client := loadgen.NewHTTPClient()
	defer client.CloseIdleConnections()
	cfg := loadgen.Config{
		BaseURL: base, Model: "sim", API: loadgen.APIChat, Stream: true, IgnoreEOS: true, Seed: 1,
		Duration: time.Duration(seconds) * time.Second, GracePeriod: 10 * time.Second,
		RequestTimeout: 10 * time.Second, Client: client, SpinWindow: benchkit.EnvDuration(b, "LENS_REPLAY_SPIN", 0),
	}
	for b.Loop() {
		path := os.Getenv("LENS_REPLAY_RECORDS") // keep the records for a closer look
		if path == "" {
			path = filepath.Join(b.TempDir(), "per-request.jsonl")
		}
		out, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		jsonl := loadgen.NewJSONLWriter(out)
		drift := make([]float64, 0, n)
		starts := make([]float64, 0, n)
		successful := 0
		sink := loadgen.SinkFunc(func(r loadgen.Record) error {
			drift = append(drift, (r.StartedAtSeconds-r.ScheduledAtSeconds)*1000)
			starts = append(starts, r.StartedAtSeconds)
			if r.Successful {
				successful++
			}
			return jsonl.Record(r)
		})
		cpuBefore := benchkit.CPUTime()
		st, err := loadgen.Run(context.Background(), cfg, schedule, sink)
		cpuUsed := benchkit.CPUTime() - cpuBefore
		if err != nil {
			b.Fatal(err)
		}
		if err := jsonl.Close(); err != nil {
			b.Fatal(err)
		}
		if st.Sent != int64(n) {
			b.Fatalf("sent %d of %d", st.Sent, n)
		}
		sort.Float64s(drift)
		sort.Float64s(starts)
		achieved := float64(n-1) / (starts[n-1] - starts[0])
		b.ReportMetric(benchkit.Percentile(drift, 50), "drift-p50-ms")
		b.ReportMetric(benchkit.Percentile(drift, 90), "drift-p90-ms")
		b.ReportMetric(benchkit.Percentile(drift, 99), "drift-p99-ms")
		b.ReportMetric(drift[n-1], "drift-max-ms")
		b.ReportMetric(achieved, "achieved-rps")
		b.ReportMetric(100*math.Abs(achieved-float64(rate))/float64(rate), "rate-err-%")
		b.ReportMetric(100*float64(successful)/float64(n), "success-%")
		b.ReportMetric(float64(cpuUsed.Microseconds())/float64(n), "cpu-us/req")
	}
}

// startTarget builds (unless LENS_SIM_BIN names a binary) and starts the simulator with zero latency and room for every request,
// and returns its base URL. The simulator runs as its own process, like a real endpoint.
func startTarget(b *testing.B) string {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	bin := os.Getenv("LENS_SIM_BIN") // a prebuilt simulator saves the build on repeated runs
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "inference-sim")
		build := exec.Command("go", "build", "-o", bin, "./functions/inferencesim/cmd/inference-sim")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building the simulator: %v\n%s", err, out)
		}
	}
	port := benchkit.FreePort(b)
	sim := exec.Command(bin, "--model", "sim", "--port", strconv.Itoa(port), "--seed", "1",
		"--max-num-seqs", "4096", "--max-waiting-queue-length", "100000", "--max-model-len", "4096")
	sim.Stdout, sim.Stderr = io.Discard, os.Stderr
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = sim.Process.Kill()
		_ = sim.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/models")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the simulator did not answer on %s: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
