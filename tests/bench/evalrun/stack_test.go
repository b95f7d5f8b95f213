package evalrun_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
	"github.com/lensfn/lensfn/tests/stacktest"
)

// evalStack is the local stack's evaluation side (inventory-api, evaluation-api and the
// benchmark-runner as processes, Redis and the broker) with one endpoint registered.
type evalStack struct {
	api    string // .../api/v1/evaluate
	execID string
	runner func() int // the benchmark-runner's pid
}

// startEvalStack starts the stack with the functions' default settings (lease, sweep and
// scrape intervals as shipped) and registers endpoint (an OpenAI base URL ending in /v1) as a
// deployment execution of the local cluster, through inventory-api.
func startEvalStack(b *testing.B, endpoint string) *evalStack {
	stack := stacktest.Start(b, stacktest.Options{Only: []string{"inventory-api", "evaluation-api", "benchmark-runner"},
		NoModules: true, Log: func(string, ...any) {}})
	reg := fmt.Sprintf(`{"cluster_session_id":%q,"name":"bench-sim","model":%q,"endpoint":%q}`, stack.LocalSessionID, simModel, endpoint)
	code, body := call(b, http.MethodPost, stack.APIURL+"/api/v1/deployments/executions", reg)
	var exec struct {
		ID string `json:"id"`
	}
	if code != http.StatusCreated || json.Unmarshal(body, &exec) != nil || exec.ID == "" {
		b.Fatalf("registering the simulator: %d %s", code, body)
	}
	return &evalStack{api: stack.APIURL + "/api/v1/evaluate", execID: exec.ID, runner: func() int { return stack.PID("benchmark-runner") }}
}

func call(b *testing.B, method, url, body string) (int, []byte) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// matrixRun is a one-point, one-stage matrix run without warm-up.
func (s *evalStack) matrixRun(b *testing.B, concurrency, requests, isl, osl int) string {
	body := fmt.Sprintf(`{"deployment_execution_id":%q,"matrix":[{"isl":%d,"osl":%d}],"warmup_requests":0,`+
		`"concurrency_stages":[{"concurrency":%d,"num_requests":%d}]}`, s.execID, isl, osl, concurrency, requests)
	code, raw := call(b, http.MethodPost, s.api+"/runs", body)
	var run struct {
		ID string `json:"id"`
	}
	if code != http.StatusAccepted || json.Unmarshal(raw, &run) != nil {
		b.Fatalf("POST /runs: %d %s", code, raw)
	}
	return run.ID
}

// runRecord is what the benchmark reads of a run.
type runRecord struct {
	Status           string         `json:"status"`
	Error            *string        `json:"error"`
	CreatedAt        string         `json:"created_at"`
	StartedAt        string         `json:"started_at"`
	PhaseStartedAt   string         `json:"phase_started_at"`
	BenchmarkStarted string         `json:"benchmark_started_at"`
	FinishedAt       string         `json:"finished_at"`
	Metrics          map[string]any `json:"metrics"`
}

func (s *evalStack) wait(b *testing.B, id string, timeout time.Duration) runRecord {
	deadline := time.Now().Add(timeout)
	for {
		code, raw := call(b, http.MethodGet, s.api+"/runs/"+id, "")
		var run runRecord
		if code != http.StatusOK || json.Unmarshal(raw, &run) != nil {
			b.Fatalf("GET run: %d %s", code, raw)
		}
		switch run.Status {
		case "succeeded":
			return run
		case "failed", "cancelled":
			b.Fatalf("run %s ended %s: %v", id, run.Status, deref(run.Error))
		}
		if time.Now().After(deadline) {
			b.Fatalf("run %s still %s after %s", id, run.Status, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func stamp(b *testing.B, field, v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		b.Fatalf("the run's %s %q: %v", field, v, err)
	}
	return t
}

// span is the first request's start and the last one's completion (seconds on the stage's
// clock) in the run's per-request artifact, and the number of records.
func (s *evalStack) span(b *testing.B, id string) (first, last float64, n int) {
	resp, err := http.Get(s.api + "/runs/" + id + "/artifacts/per-request-jsonl")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("the per-request artifact: HTTP %d", resp.StatusCode)
	}
	first, last = 1e18, -1e18
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r struct {
			Started   float64 `json:"started_at_seconds"`
			Completed float64 `json:"completed_at_seconds"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatalf("record %d: %v", n+1, err)
		}
		first, last = min(first, r.Started), max(last, r.Completed)
		n++
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return first, last, n
}

// stampingProxy relays to the simulator and notes, on the benchmark's own clock, when the
// first inference request arrived and when the last one's answer ended: a check on the
// timestamps derived from the run record, independent of the runner.
type stampingProxy struct {
	url   string
	mu    sync.Mutex
	first time.Time
	last  time.Time
}

func newStampingProxy(b *testing.B, target string) *stampingProxy {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // stream every chunk at once
	p := &stampingProxy{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inference := r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/")
		if inference {
			p.mu.Lock()
			if p.first.IsZero() {
				p.first = time.Now()
			}
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
		if inference {
			p.mu.Lock()
			p.last = time.Now()
			p.mu.Unlock()
		}
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	p.url = "http://" + l.Addr().String()
	return p
}

func (p *stampingProxy) reset() {
	p.mu.Lock()
	p.first, p.last = time.Time{}, time.Time{}
	p.mu.Unlock()
}

func (p *stampingProxy) seen() (first, last time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first, p.last
}

// BenchmarkRunnerStack drives the benchmark-runner function on the local stack over HTTP.
// Run with -benchtime 1x.
//   - requests-100k/c=N: one matrix run of LENS_EVAL_STACK_REQUESTS (100,000) streamed requests
//     at concurrency N (LENS_EVAL_STACK_CONCURRENCY, default 256 and 4096), on a fresh stack:
//     the runner process's peak RSS (VmHWM, the whole process lifetime) and CPU per request
//     (/proc/PID/stat from POST to succeeded), and the run's orchestration overhead.
//   - orchestration: LENS_EVAL_ORCH_RUNS (5) small runs (20 requests, concurrency 1) one after
//     another on one stack: queued (created_at) to the first request and the last request to
//     succeeded (finished_at). The request times come from the per-request records on the
//     run's clock anchored at benchmark_started_at, and, as a check, from a relay in front of the
//     simulator that stamps the first inference request and the end of the last answer.
func BenchmarkRunnerStack(b *testing.B) {
	requests := benchkit.EnvInt(b, "LENS_EVAL_STACK_REQUESTS", 100_000)
	concurrencies := []int{256, 4096}
	if v := benchkit.EnvInt(b, "LENS_EVAL_STACK_CONCURRENCY", 0); v > 0 {
		concurrencies = []int{v}
	}
	checkFileLimit(b, 4096)
	for _, c := range concurrencies {
		b.Run(fmt.Sprintf("requests-100k/c=%d", c), func(b *testing.B) {
			for b.Loop() {
				sim := startSimulator(b)
				s := startEvalStack(b, sim.base+"/v1")
				pid := s.runner()
				cpu0, err := procCPU(pid)
				if err != nil {
					b.Fatal(err)
				}
				posted := time.Now()
				id := s.matrixRun(b, c, requests, 64, 16)
				run := s.wait(b, id, 30*time.Minute)
				took := time.Since(posted)
				cpu1, _ := procCPU(pid)
				hwm, err := procStatusKB(pid, "VmHWM")
				if err != nil {
					b.Fatal(err)
				}
				if s.runner() != pid {
					b.Fatal("the benchmark-runner restarted during the run")
				}
				first, last, n := s.span(b, id)
				if n != requests || run.Metrics["success_count"] != float64(requests) {
					b.Fatalf("%d records, %v successful of %d", n, run.Metrics["success_count"], requests)
				}
				o := overheadOf(b, run, first, last)
				b.ReportMetric(float64(hwm)/1024, "runner-peak-rss-MB")
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(requests), "runner-cpu-us/req")
				b.ReportMetric(float64(requests)/took.Seconds(), "req/s")
				b.ReportMetric(o.queuedToFirst.Seconds()*1000, "queued-to-first-ms")
				b.ReportMetric(o.lastToSucceeded.Seconds()*1000, "last-to-succeeded-ms")
				b.ReportMetric(loadAverage(), "load-1m")
			}
		})
	}
	b.Run("orchestration", func(b *testing.B) {
		runs := benchkit.EnvInt(b, "LENS_EVAL_ORCH_RUNS", 5)
		for b.Loop() {
			sim := startSimulator(b)
			proxy := newStampingProxy(b, sim.base)
			s := startEvalStack(b, proxy.url+"/v1")
			var toFirst, toDone, relayFirst, relayDone []float64
			for range runs {
				proxy.reset()
				id := s.matrixRun(b, 1, 20, 64, 16)
				run := s.wait(b, id, 2*time.Minute)
				first, last, n := s.span(b, id)
				if n != 20 {
					b.Fatalf("%d records", n)
				}
				o := overheadOf(b, run, first, last)
				pf, pl := proxy.seen()
				toFirst = append(toFirst, o.queuedToFirst.Seconds()*1000)
				toDone = append(toDone, o.lastToSucceeded.Seconds()*1000)
				relayFirst = append(relayFirst, pf.Sub(o.queued).Seconds()*1000)
				relayDone = append(relayDone, o.succeeded.Sub(pl).Seconds()*1000)
				b.Logf("run %s: queued->first %.0f ms (relay %.0f), last->succeeded %.0f ms (relay %.0f); claimed after %.0f ms",
					id, toFirst[len(toFirst)-1], relayFirst[len(relayFirst)-1], toDone[len(toDone)-1], relayDone[len(relayDone)-1],
					o.claimed.Sub(o.queued).Seconds()*1000)
			}
			b.ReportMetric(median(toFirst), "queued-to-first-ms")
			b.ReportMetric(slices.Max(toFirst), "queued-to-first-max-ms")
			b.ReportMetric(median(relayFirst), "relay-queued-to-first-ms")
			b.ReportMetric(median(toDone), "last-to-succeeded-ms")
			b.ReportMetric(slices.Max(toDone), "last-to-succeeded-max-ms")
			b.ReportMetric(median(relayDone), "relay-last-to-succeeded-ms")
			b.ReportMetric(loadAverage(), "load-1m")
		}
	})
}

// overhead is a run's orchestration on the run record's clock.
type overhead struct {
	queued, claimed, succeeded     time.Time
	queuedToFirst, lastToSucceeded time.Duration
}

// overheadOf anchors the records' clock at the run's benchmark_started_at: the runner takes
// that moment as the zero of every stage's record times (to the millisecond the timestamp
// keeps).
func overheadOf(b *testing.B, run runRecord, first, last float64) overhead {
	o := overhead{queued: stamp(b, "created_at", run.CreatedAt), claimed: stamp(b, "started_at", run.StartedAt),
		succeeded: stamp(b, "finished_at", run.FinishedAt)}
	// The records' times count from the start of the measured traffic, benchmark_started_at.
	origin := stamp(b, "benchmark_started_at", run.BenchmarkStarted)
	o.queuedToFirst = origin.Add(seconds(first)).Sub(o.queued)
	o.lastToSucceeded = o.succeeded.Sub(origin.Add(seconds(last)))
	return o
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func median(v []float64) float64 {
	s := sortedCopy(v)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
