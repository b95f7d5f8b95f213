package inferencerouter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests run real inference-sim processes on loopback (built once;
// LENS_SIM_BIN points at a prebuilt binary).

var simBin string

func TestMain(m *testing.M) {
	code := m.Run()
	if simBin != "" && os.Getenv("LENS_SIM_BIN") == "" {
		os.RemoveAll(filepath.Dir(simBin))
	}
	os.Exit(code)
}

func simBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("LENS_SIM_BIN"); b != "" {
		return b
	}
	if simBin == "" {
		dir, err := os.MkdirTemp("", "router-sim")
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "inference-sim")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/lensfn/lensfn/functions/inferencesim/cmd/inference-sim").CombinedOutput()
		if err != nil {
			t.Fatalf("building the simulator: %v\n%s", err, out)
		}
		simBin = bin
	}
	return simBin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startSim starts a simulator and returns its base URL once it answers.
func startSim(t *testing.T, args ...string) string {
	t.Helper()
	return startSimOnPort(t, freePort(t), args...)
}

func startSimOnPort(t *testing.T, port int, args ...string) string {
	t.Helper()
	cmd := exec.Command(simBinary(t), append([]string{"--model", "m", "--port", strconv.Itoa(port)}, args...)...)
	cmd.Env = append(os.Environ(), "POD_IP=127.0.0.1")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitHealthy(t, base)
	return base
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never became healthy", base)
}

// startRouter serves a router on loopback and returns its base URL.
func startRouter(t *testing.T, args ...string) string {
	t.Helper()
	cfg := testConfig(t, args...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, ln, io.Discard) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + ln.Addr().String()
	waitHealthy(t, base)
	return base
}

func postJSON(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func metricSum(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? ([0-9.e+-]+)`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			sum += v
		}
	}
	return sum
}

// sharedPrefixWorkload sends groups of requests sharing a long system
// prompt and returns the simulators' prefix-cache hit rate.
func sharedPrefixHitRate(t *testing.T, profile string) float64 {
	kv := []string{"--enable-kvcache", "--block-size", "16", "--kv-cache-size", "4096", "--zmq-endpoint", "tcp://127.0.0.1:1", "--zmq-max-connect-attempts", "1"}
	var sims []string
	for range 4 {
		sims = append(sims, startSim(t, kv...))
	}
	router := startRouter(t, "--replicas", strings.Join(sims, ","), "--profile", profile, "--seed", "11", "--scrape-interval", "0")
	for g := range 4 {
		system := strings.Repeat(fmt.Sprintf("group %d system prompt with many words ", g), 20)
		for i := range 6 {
			body := `{"model":"m","max_tokens":2,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"question ` + strconv.Itoa(i) + `"}]}`
			if resp, b := postJSON(t, router+"/v1/chat/completions", body); resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", profile, resp.StatusCode, b)
			}
		}
	}
	var hits, queries float64
	for _, s := range sims {
		hits += metricSum(t, s, "vllm:prefix_cache_hits_total")
		queries += metricSum(t, s, "vllm:prefix_cache_queries_total")
	}
	if queries == 0 {
		t.Fatal("the simulators report no prefix-cache queries")
	}
	return hits / queries
}

func TestPrefixAffinityRaisesTheSimulatorsHitRate(t *testing.T) {
	random := sharedPrefixHitRate(t, "random")
	affinity := sharedPrefixHitRate(t, "prefix-affinity")
	t.Logf("prefix cache hit rate: random %.3f, prefix-affinity %.3f", random, affinity)
	// 4 groups x 6 requests on 4 replicas: affinity misses only each group's
	// first request (hit rate ~5/6 of the shared part); random misses once
	// per group per replica it lands on
	if affinity <= random || affinity < 0.6 {
		t.Fatalf("prefix-affinity hit rate %.3f, random %.3f", affinity, random)
	}
}

func TestPrecisePrefixLearnsFromKVEvents(t *testing.T) {
	zmqPort := freePort(t)
	zmq := "tcp://127.0.0.1:" + strconv.Itoa(zmqPort)
	kv := []string{"--enable-kvcache", "--block-size", "16", "--zmq-endpoint", zmq, "--event-batch-size", "1"}
	// the router binds first so the simulators' PUB sockets find it; their
	// ports are chosen before they start, for the router's replica list
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var sims []string
	for _, p := range ports {
		sims = append(sims, "http://127.0.0.1:"+strconv.Itoa(p))
	}
	router := startRouter(t, "--replicas", strings.Join(sims, ","), "--profile", "precise-prefix", "--zmq-endpoint", zmq,
		"--seed", "2", "--scrape-interval", "0")
	for _, p := range ports {
		startSimOnPort(t, p, kv...)
	}
	var system string
	body := func(i int) string {
		return `{"model":"m","max_tokens":2,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"q` + strconv.Itoa(i) + `"}]}`
	}
	// seed one replica directly, bypassing the router: only its events can
	// tell the router. A PUB socket drops what it sends before its peer has
	// joined, so seed with fresh prompts until an event arrives.
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 0; metricSum(t, router, "inference_router_kv_events_total") == 0; attempt++ {
		if time.Now().After(deadline) {
			t.Fatal("no KV event reached the router")
		}
		system = strings.Repeat(fmt.Sprintf("precise routing shared system prompt %d words ", attempt), 20)
		if resp, b := postJSON(t, sims[1]+"/v1/chat/completions", body(0)); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		for range 10 {
			if metricSum(t, router, "inference_router_kv_events_total") > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i := 1; i <= 5; i++ {
		resp, b := postJSON(t, router+"/v1/chat/completions", body(i))
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if got := resp.Header.Get("X-Inference-Router-Replica"); got != sims[1] {
			t.Fatalf("request %d went to %s, but only %s holds the prefix", i, got, sims[1])
		}
	}
	if metricSum(t, router, "inference_router_prefix_predicted_hits_total") < 5 {
		t.Fatal("predicted hits not counted")
	}
}

func TestPDStreamsThroughPrefillAndDecode(t *testing.T) {
	prefill := startSim(t)
	decode := startSim(t)
	router := startRouter(t, "--profile", "pd", "--prefill-replicas", prefill, "--decode-replicas", decode, "--scrape-interval", "0")
	resp, body := postJSON(t, router+"/v1/chat/completions",
		`{"model":"m","max_tokens":5,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, "data: [DONE]") || strings.Count(body, "data: ") < 5 {
		t.Fatalf("stream incomplete: %s", body)
	}
	if got := resp.Header.Get("X-Inference-Router-Replica"); got != decode {
		t.Fatalf("decode leg answered by %s", got)
	}
	// each side saw exactly one request: the prefill leg (1 token) and the decode leg
	if n := metricSum(t, prefill, "vllm:request_success_total"); n != 1 {
		t.Fatalf("prefill replica completed %v requests", n)
	}
	if n := metricSum(t, decode, "vllm:request_success_total"); n != 1 {
		t.Fatalf("decode replica completed %v requests", n)
	}
	if n := metricSum(t, prefill, "vllm:generation_tokens_total"); n != 1 {
		t.Fatalf("prefill leg generated %v tokens, want 1", n)
	}
}

func TestBalancedEndpointSpreadsAndModelsAnswer(t *testing.T) {
	var sims []string
	for range 3 {
		sims = append(sims, startSim(t))
	}
	router := startRouter(t, "--replicas", strings.Join(sims, ","), "--profile", "prefix-affinity", "--scrape-interval", "0")
	count := map[string]int{}
	for range 9 {
		resp, b := postJSON(t, router+"/balanced/v1/chat/completions", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"same prompt every time, long enough to fill blocks of text"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		count[resp.Header.Get("X-Inference-Router-Replica")]++
	}
	for _, s := range sims {
		if count[s] != 3 {
			t.Fatalf("balanced spread %v, want 3 each", count)
		}
	}
	resp, err := http.Get(router + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"m"`) {
		t.Fatalf("/v1/models: %d %s", resp.StatusCode, b)
	}
	// an upstream error passes through as the replica wrote it
	req, _ := http.NewRequest(http.MethodPost, router+"/v1/chat/completions", strings.NewReader(`{"model":"nope","messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"error"`) {
		t.Fatalf("unknown model: %d %s", resp.StatusCode, b)
	}
}

// A stream in flight when the drain begins still finishes.
func TestDrainLetsInFlightStreamsFinish(t *testing.T) {
	sim := startSim(t, "--time-to-first-token", "200ms", "--inter-token-latency", "20ms")
	cfg := testConfig(t, "--replicas", sim, "--scrape-interval", "0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, ln, io.Discard) }()
	base := "http://" + ln.Addr().String()
	waitHealthy(t, base)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel() // the response headers are in: the request is in flight
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(body), "data: [DONE]") {
		t.Fatalf("in-flight stream cut by the drain: %v %q", err, body)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
