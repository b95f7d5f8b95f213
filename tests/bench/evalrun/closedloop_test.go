package evalrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// The closed loop's shape (LENS_EVAL_* vary it): 4,096 in flight, 64-token prompts, 16 output
// tokens with ignore_eos, the runner's default API (completions), against a simulator that
// answers in 650 ms (simLatency), so the 4,096 requests are in flight at the server rather
// than queued in socket buffers, and the server needs well under a core.
type loopShape struct {
	concurrency, isl, osl int
	requests              int // the schedule's length: longer than warm-up plus window
	warm, window          time.Duration
}

func shapeOf(b *testing.B) loopShape {
	return loopShape{
		concurrency: benchkit.EnvInt(b, "LENS_EVAL_CONCURRENCY", 4096),
		requests:    benchkit.EnvInt(b, "LENS_EVAL_LOOP_REQUESTS", 1_000_000),
		isl:         benchkit.EnvInt(b, "LENS_EVAL_ISL", 64),
		osl:         benchkit.EnvInt(b, "LENS_EVAL_OSL", 16),
		warm:        benchkit.EnvDuration(b, "LENS_EVAL_WARM", 5*time.Second),
		window:      benchkit.EnvDuration(b, "LENS_EVAL_WINDOW", 20*time.Second),
	}
}

// simLatency is the simulator's latency model in the closed loop: LENS_EVAL_SIM_LATENCY
// ("TTFT,ITL"), default 500 ms to the first token and 10 ms per further token.
func simLatency(b *testing.B) []string {
	v := os.Getenv("LENS_EVAL_SIM_LATENCY")
	if v == "" {
		v = "500ms,10ms"
	}
	ttft, itl, ok := strings.Cut(v, ",")
	if !ok {
		b.Fatalf("LENS_EVAL_SIM_LATENCY=%q: want TTFT,ITL (e.g. 500ms,10ms)", v)
	}
	return []string{"--time-to-first-token", ttft, "--inter-token-latency", itl}
}

// window is what one client did over the measured window.
type window struct {
	cpu            time.Duration
	requests       float64 // answered by the simulator in the window
	seconds        float64
	serverInFlight float64 // mean of running + waiting at the simulator, sampled every second
	clientInFlight float64 // mean in flight at the client (the engine's Progress; NaN for others)
}

func (w window) report(b *testing.B, clientRSSKB int64) {
	b.ReportMetric(float64(w.cpu.Microseconds())/w.requests, "cpu-us/req")
	b.ReportMetric(w.requests/w.seconds, "req/s")
	b.ReportMetric(w.serverInFlight, "server-in-flight")
	if !math.IsNaN(w.clientInFlight) {
		b.ReportMetric(w.clientInFlight, "client-in-flight")
	}
	if clientRSSKB > 0 {
		b.ReportMetric(float64(clientRSSKB)/1024, "client-peak-rss-MB")
	}
	b.ReportMetric(loadAverage(), "load-1m")
}

// measure waits for the client's first answers, lets it warm up, then measures its CPU (cpu)
// and the simulator's answered requests over the window. The same rule for every client, so
// start-up (k6's VU initialisation, the engine's first dials) stays outside the window.
func measure(b *testing.B, sim *simulator, shape loopShape, cpu func() (time.Duration, error), inFlight func() float64) window {
	deadline := time.Now().Add(3 * time.Minute)
	for sim.counters(b).completed == 0 {
		if time.Now().After(deadline) {
			b.Fatal("the client sent nothing the simulator answered within 3 minutes")
		}
		if _, err := cpu(); err != nil {
			b.Fatalf("the client stopped before its first answer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(shape.warm)
	c0, err := cpu()
	if err != nil {
		b.Fatal(err)
	}
	n0, t0 := sim.counters(b).completed, time.Now()
	var server, client []float64
	for tick := time.NewTicker(time.Second); time.Since(t0) < shape.window; {
		<-tick.C
		c := sim.counters(b)
		server = append(server, c.running+c.queued)
		if inFlight != nil {
			client = append(client, inFlight())
		}
	}
	c1, err := cpu()
	if err != nil {
		b.Fatal(err)
	}
	n1, t1 := sim.counters(b).completed, time.Now()
	w := window{cpu: c1 - c0, requests: n1 - n0, seconds: t1.Sub(t0).Seconds(), serverInFlight: mean(server), clientInFlight: mean(client)}
	if w.requests <= 0 {
		b.Fatal("no request was answered in the window")
	}
	return w
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// BenchmarkClosedLoop holds LENS_EVAL_CONCURRENCY (4,096) requests in flight against a fresh
// zero-latency simulator per client and reports the client's CPU per request over the window.
// Run with -benchtime 1x; -count repeats. Sub-benchmarks:
//   - engine-stream: runtime/loadgen as the benchmark-runner drives it (completions, streamed,
//     ignore_eos, inter-token times, its lean client dialling through an egress policy), with the runner's per-record
//     work: three metrics builders (run, point, stage) and the JSONL artifact;
//   - engine-plain: the same, not streamed (the like-for-like line for k6 and vegeta);
//   - k6 and vegeta: the same non-streamed request from the tool as a child process, CPU from
//     /proc/PID/stat (skipped, saying so, when the tool is not on the PATH or in $GOPATH/bin).
func BenchmarkClosedLoop(b *testing.B) {
	shape := shapeOf(b)
	checkFileLimit(b, shape.concurrency)
	b.Run("engine-stream", func(b *testing.B) { runEngineLoop(b, shape, true) })
	b.Run("engine-plain", func(b *testing.B) { runEngineLoop(b, shape, false) })
	b.Run("k6", func(b *testing.B) { runToolLoop(b, shape, "k6") })
	b.Run("vegeta", func(b *testing.B) { runToolLoop(b, shape, "vegeta") })
}

// fixedLengths is an endless-enough closed-loop schedule of fixed lengths (the runner's
// matrix point), built per request as the runner's is.
type fixedLengths struct {
	n, isl, osl int
	meta        map[string]any // shared by every request, as the runner's is
}

func (s fixedLengths) Len() int { return s.n }
func (s fixedLengths) Load(i int, r *loadgen.Request) error {
	*r = loadgen.Request{InputTokens: s.isl, OutputTokens: s.osl, Metadata: s.meta}
	return nil
}

// runnerSink does per record what the benchmark-runner's stage sink does: take the gaps out of
// the metadata, add the record to the stage, point and run builders and write it to the JSONL
// artifact, under one lock.
func runnerSink(path string) (loadgen.Sink, func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	jsonl := loadgen.NewJSONLWriter(f)
	samples := evalrun.NewSamples()
	stage, point, total := samples.NewBuilder(nil), samples.NewBuilder(nil), samples.NewBuilder(nil)
	var mu sync.Mutex
	sink := loadgen.SinkFunc(func(rec loadgen.Record) error {
		gaps, _ := rec.Metadata["inter_token_ms"].([]float64)
		delete(rec.Metadata, "inter_token_ms")
		rec.Metadata["phase"], rec.Metadata["worker"] = "matrix-0", 0
		mu.Lock()
		samples.Add(rec, gaps, stage, point, total)
		mu.Unlock()
		return jsonl.Record(rec)
	})
	return sink, jsonl.Close, nil
}

func runEngineLoop(b *testing.B, shape loopShape, stream bool) {
	for b.Loop() {
		sim := startSimulator(b, simLatency(b)...)
		// The engine's own lean client dialling through an egress policy, as the runner drives it.
		cfg := loadgen.Config{Dial: egress.New(egress.Rules{}).DialContext}
		w := engineWindow(b, sim, shape, cfg, stream, "bench")
		rss, _ := procStatusKB(os.Getpid(), "VmHWM")
		w.report(b, rss)
	}
}

// engineWindow runs the engine's closed loop against sim with cfg's transport (the runner's
// settings and per-record work) and measures one window of it.
func engineWindow(b *testing.B, sim *simulator, shape loopShape, cfg loadgen.Config, stream bool, runID string) window {
	sink, closeSink, err := runnerSink(filepath.Join(b.TempDir(), evalrun.RecordsFile))
	if err != nil {
		b.Fatal(err)
	}
	progress := &loadgen.Progress{}
	cfg.BaseURL, cfg.Model, cfg.API = sim.base+"/v1", simModel, loadgen.APICompletions
	cfg.Stream, cfg.IgnoreEOS, cfg.InterTokenTimes = stream, true, stream
	cfg.Concurrency, cfg.Seed, cfg.Progress, cfg.RunID = shape.concurrency, 1, progress, runID
	// Long enough to hold the loop through the warm-up and the window; then no new sends.
	cfg.Duration = 30*time.Second + shape.warm + shape.window
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		_, runErr = loadgen.RunSchedule(ctx, cfg, fixedLengths{n: shape.requests, isl: shape.isl, osl: shape.osl,
			meta: map[string]any{"stage": 0, "concurrency": shape.concurrency, "isl": shape.isl, "osl": shape.osl}}, sink)
	}()
	cpu := func() (time.Duration, error) {
		select {
		case <-done:
			return 0, fmt.Errorf("the engine's run ended: %v", runErr)
		default:
			return benchkit.CPUTime(), nil
		}
	}
	w := measure(b, sim, shape, cpu, func() float64 { return float64(progress.Snapshot().InFlight) })
	cancel()
	<-done
	if runErr != nil && ctx.Err() == nil {
		b.Fatal(runErr)
	}
	if err := closeSink(); err != nil {
		b.Fatal(err)
	}
	if cfg.Client != nil {
		cfg.Client.CloseIdleConnections()
	}
	return w
}

// plainBody is the non-streamed request k6 and vegeta send: what the engine sends for a
// matrix point (a prompt of isl words, max_tokens = min_tokens = osl, ignore_eos).
func plainBody(shape loopShape) []byte {
	words := make([]string, shape.isl)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i%97)
	}
	body, _ := json.Marshal(map[string]any{"model": simModel, "prompt": strings.Join(words, " "), "max_tokens": shape.osl,
		"min_tokens": shape.osl, "ignore_eos": true, "stream": false})
	return body
}

// toolPath finds k6 or vegeta on the PATH or in $GOPATH/bin (where go install puts them).
func toolPath(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", false
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
	_, err = os.Stat(p)
	return p, err == nil
}

const k6Script = `import http from 'k6/http';
const url = __ENV.TARGET;
const body = open(__ENV.BODY);
const params = { headers: { 'Content-Type': 'application/json' } };
export default function () { http.post(url, body, params); }
`

func runToolLoop(b *testing.B, shape loopShape, tool string) {
	bin, ok := toolPath(tool)
	if !ok {
		install := map[string]string{"k6": "go.k6.io/k6@v1.8.1", "vegeta": "github.com/tsenart/vegeta/v12@v12.13.0"}[tool]
		b.Skipf("%s is not installed, so its side of the comparison is skipped: GOFLAGS= go install %s", tool, install)
	}
	for b.Loop() {
		sim := startSimulator(b, simLatency(b)...)
		dir := b.TempDir()
		bodyPath := filepath.Join(dir, "body.json")
		if err := os.WriteFile(bodyPath, plainBody(shape), 0o600); err != nil {
			b.Fatal(err)
		}
		target := sim.base + "/v1/completions"
		run := (30*time.Second + shape.warm + shape.window).Round(time.Second)
		var cmd *exec.Cmd
		switch tool {
		case "k6":
			script := filepath.Join(dir, "loop.js")
			if err := os.WriteFile(script, []byte(k6Script), 0o600); err != nil {
				b.Fatal(err)
			}
			// 4,096 VUs each looping one request: k6's closed loop. No usage report (the
			// benchmark never leaves loopback), no summary (outside the window anyway).
			cmd = exec.Command(bin, "run", "--quiet", "--no-usage-report", "--no-summary", "--no-thresholds",
				"--vus", fmt.Sprint(shape.concurrency), "--duration", run.String(), script)
			cmd.Env = append(os.Environ(), "TARGET="+target, "BODY="+bodyPath, "K6_NO_USAGE_REPORT=true")
		case "vegeta":
			// -rate=0 sends as fast as the workers allow: with 4,096 workers, vegeta's closed loop.
			cmd = exec.Command(bin, "attack", "-rate=0", fmt.Sprintf("-workers=%d", shape.concurrency),
				fmt.Sprintf("-max-workers=%d", shape.concurrency), "-duration="+run.String(), "-timeout=60s",
				"-body="+bodyPath, "-header=Content-Type: application/json", "-output=/dev/null")
			cmd.Stdin = strings.NewReader("POST " + target + "\n")
		}
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pid := cmd.Process.Pid
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				_ = cmd.Process.Signal(syscall.SIGTERM)
				t := time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
				_ = cmd.Wait()
				t.Stop()
			}
		}
		b.Cleanup(stop)
		w := measure(b, sim, shape, func() (time.Duration, error) { return procCPU(pid) }, nil)
		rss, _ := procStatusKB(pid, "VmHWM")
		stop()
		w.clientInFlight = math.NaN()
		w.report(b, rss)
	}
}
