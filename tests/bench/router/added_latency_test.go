package router_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	inferencerouter "github.com/lensfn/lensfn/functions/inference-router"
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

// BenchmarkAddedLatency sends the same zero-latency chat request at a constant rate to a
// simulator (LENS_SIM_BIN) directly, then through a router (LENS_ROUTER_PROFILE, default random)
// in front of it, and reports both latency distributions and their difference.
func BenchmarkAddedLatency(b *testing.B) {
	bin := os.Getenv("LENS_SIM_BIN")
	if bin == "" {
		b.Skip("LENS_SIM_BIN: path of a built inference-sim")
	}
	rate := benchkit.EnvInt(b, "LENS_ROUTER_RATE", 10000)
	seconds := benchkit.EnvInt(b, "LENS_ROUTER_SECONDS", 10)
	profile := os.Getenv("LENS_ROUTER_PROFILE")
	if profile == "" {
		profile = "random"
	}
	simPort := benchkit.FreePort(b)
	sim := exec.Command(bin, "--model", "fake-model", "--port", strconv.Itoa(simPort), "--max-num-seqs", "4096", "--seed", "1")
	sim.Stderr = io.Discard
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { sim.Process.Kill(); sim.Wait() }()
	simURL := "http://127.0.0.1:" + strconv.Itoa(simPort)
	waitHealthy(b, simURL)

	cfg, err := inferencerouter.ParseConfig([]string{"--replicas", simURL, "--profile", profile, "--seed", "1", "--scrape-interval", "0"},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inferencerouter.Serve(ctx, cfg, ln, io.Discard) }()
	defer func() { cancel(); <-done }()
	routerURL := "http://" + ln.Addr().String()
	waitHealthy(b, routerURL)

	for b.Loop() {
		direct := constantRate(b, simURL+"/v1/chat/completions", rate, seconds)
		routed := constantRate(b, routerURL+"/v1/chat/completions", rate, seconds)
		for _, q := range []float64{50, 90, 99} {
			d, r := percentile(direct.lat, q), percentile(routed.lat, q)
			b.ReportMetric(d, fmt.Sprintf("direct-p%.0f-us", q))
			b.ReportMetric(r, fmt.Sprintf("routed-p%.0f-us", q))
			b.ReportMetric(r-d, fmt.Sprintf("added-p%.0f-us", q))
		}
		b.ReportMetric(direct.achieved, "direct-req/s")
		b.ReportMetric(routed.achieved, "routed-req/s")
		b.ReportMetric(float64(direct.errors+routed.errors), "errors")
	}
}

type run struct {
	lat      []float64 // microseconds, from send to the end of the body
	achieved float64
	errors   int
}

// constantRate sends rate req/s for seconds from a pool of workers fed on an absolute schedule.
func constantRate(b *testing.B, url string, rate, seconds int) run {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024, DisableCompression: true}}
	n := rate * seconds
	jobs := make(chan struct{}, 4096)
	var mu sync.Mutex
	out := run{lat: make([]float64, 0, n)}
	var wg sync.WaitGroup
	for range 512 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]float64, 0, n/256)
			errs := 0
			for range jobs {
				t0 := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(chatBody))
				if err != nil {
					errs++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs++
					continue
				}
				local = append(local, float64(time.Since(t0).Nanoseconds())/1e3)
			}
			mu.Lock()
			out.lat = append(out.lat, local...)
			out.errors += errs
			mu.Unlock()
		}()
	}
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
			time.Sleep(d)
		}
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	out.achieved = float64(len(out.lat)) / time.Since(start).Seconds()
	sort.Float64s(out.lat)
	client.CloseIdleConnections()
	return out
}

func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q/100*float64(len(sorted))))]
}
