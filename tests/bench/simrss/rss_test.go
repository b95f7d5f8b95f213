package simrss

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// targetMB is issue 9's bound on the simulator's peak RSS per hostile request.
const targetMB = 100

// knativeFlags are the simulator's flags in deploy/knative/inference-sim.yaml, minus the latency
// (zero latency makes every request as fast, so as concentrated in memory, as it can be).
var knativeFlags = []string{"--model", "fake-model", "--max-num-seqs", "256", "--max-model-len", "262144"}

// hostile is one request of the benchmark, sent to a fresh process (or, with do, a sequence).
type hostile struct {
	name   string
	path   string
	body   func() []byte
	chunk  bool // send without Content-Length
	status int  // the answer it must get
	do     func(b *testing.B, base string)
}

func jsonList(item string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func str(s string) func() []byte { return func() []byte { return []byte(s) } }

var toolSchema = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":` +
	`{"a":{"type":"array","minItems":1000000000,"items":{"type":"array","minItems":1000000000,"items":{"type":"integer"}}}},` +
	`"required":["a"]}}}],"tool_choice":"required"`

var hostileRequests = []hostile{
	{name: "embeddings_100k_inputs_x_65536_dims", path: "/v1/embeddings", status: 400,
		body: str(`{"model":"fake-model","dimensions":65536,"input":` + jsonList(`"x"`, 100000) + `}`)},
	{name: "embeddings_largest_accepted_32x65536", path: "/v1/embeddings", status: 200,
		body: str(`{"model":"fake-model","dimensions":65536,"input":` + jsonList(`"hello world"`, 32) + `}`)},
	{name: "tool_schema_minItems_1e9", path: "/v1/chat/completions", status: 200,
		body: str(`{"model":"fake-model","messages":[{"role":"user","content":"x"}],` + toolSchema + `}`)},
	{name: "tool_schema_minItems_1e9_stream", path: "/v1/chat/completions", status: 200,
		body: str(`{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"x"}],` + toolSchema + `}`)},
	{name: "completions_100k_prompts", path: "/v1/completions", status: 400,
		body: str(`{"model":"fake-model","max_tokens":16,"prompt":` + jsonList(`"hi"`, 100000) + `}`)},
	{name: "completions_largest_accepted_128x4096", path: "/v1/completions", status: 200,
		body: str(`{"model":"fake-model","max_tokens":4096,"ignore_eos":true,"prompt":` + jsonList(`"hi"`, 64) + `,"n":2}`)},
	{name: "chat_largest_accepted_stream_524k_tokens", path: "/v1/chat/completions", status: 200,
		body: str(`{"model":"fake-model","stream":true,"n":2,"max_tokens":262000,"ignore_eos":true,"messages":[{"role":"user","content":"x"}]}`)},
	{name: "chat_logprobs_largest_accepted", path: "/v1/chat/completions", status: 200,
		body: str(`{"model":"fake-model","n":8,"max_tokens":1580,"ignore_eos":true,"logprobs":true,"top_logprobs":20,"messages":[{"role":"user","content":"x"}]}`)},
	{name: "chat_4MiB_of_empty_messages", path: "/v1/chat/completions", status: 400,
		body: func() []byte {
			return []byte(`{"model":"fake-model","messages":` + jsonList(`{}`, (4<<20-64)/3) + `}`)
		}},
	{name: "lora_10000_loads_of_128_byte_names", do: loraChurn},
	{name: "body_100MiB_with_length", path: "/v1/completions", status: 413,
		body: func() []byte { return bytes.Repeat([]byte("a"), 100<<20) }},
	{name: "body_100MiB_chunked", path: "/v1/completions", status: 413, chunk: true,
		body: func() []byte { return bytes.Repeat([]byte("a"), 100<<20) }},
}

// loraChurn loads 10,000 adapters with 128-byte names, each used by one request: the first
// 256 fill the registry, the next load is refused, then every load follows an unload (so
// series and ids of unloaded adapters must go too).
func loraChurn(b *testing.B, base string) {
	body := func(i int) []byte {
		name := fmt.Sprintf("adapter-%0120d", i)
		return []byte(`{"lora_name":"` + name + `","lora_path":"/adapters/` + name + `"}`)
	}
	chat := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"model":"adapter-%0120d","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`, i))
	}
	const bound = 256
	for i := range 10000 {
		if i == bound {
			if s := send(b, base+"/v1/load_lora_adapter", body(i), false); s != 400 {
				b.Fatalf("load %d past the bound: %d", i, s)
			}
		}
		if i >= bound {
			send(b, base+"/v1/unload_lora_adapter", body(i-bound), false)
		}
		if s := send(b, base+"/v1/load_lora_adapter", body(i), false); s != 200 {
			b.Fatalf("load %d: %d", i, s)
		}
		if s := send(b, base+"/v1/chat/completions", chat(i), false); s != 200 {
			b.Fatalf("request for adapter %d: %d", i, s)
		}
	}
}

// BenchmarkHostileRequestRSS reports, per hostile request, the simulator's peak RSS (MB) and its
// RSS before the request, and fails a case above the target or answered with another status.
func BenchmarkHostileRequestRSS(b *testing.B) {
	bin := benchkit.SimulatorBinary(b)
	for _, h := range hostileRequests {
		b.Run(h.name, func(b *testing.B) {
			for b.Loop() {
				pid, base, stop := startSimulator(b, bin)
				before := vmHWM(b, pid)
				if h.do != nil {
					h.do(b, base)
				} else if status := send(b, base+h.path, h.body(), h.chunk); status != h.status {
					b.Fatalf("%s: status %d, want %d", h.name, status, h.status)
				}
				peak := vmHWM(b, pid)
				stop()
				b.ReportMetric(float64(before)/1024, "MB-before")
				b.ReportMetric(float64(peak)/1024, "MB-peak-RSS")
				if peak/1024 >= targetMB {
					b.Errorf("%s: peak RSS %d MB, target under %d MB", h.name, peak/1024, targetMB)
				}
			}
		})
	}
}

// startSimulator starts a fresh process on a free loopback port and waits for /health.
func startSimulator(b *testing.B, bin string) (pid int, base string, stop func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--seed", "1"}, knativeFlags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	b.Cleanup(stop) // also when the case fails: no simulator outlives the benchmark
	base = "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			return cmd.Process.Pid, base, stop
		}
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("simulator did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send posts body and reads the whole answer (a stream to its end). The request is written on
// its own connection from another goroutine, so an answer the server sends before reading the
// whole body (413) is read even though the rest of the body can no longer be written.
func send(b *testing.B, url string, body []byte, chunked bool) int {
	hostPort, path, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	conn, err := net.Dial("tcp", hostPort)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	go func() {
		w := bufio.NewWriter(conn)
		fmt.Fprintf(w, "POST /%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nConnection: close\r\n", path, hostPort)
		if chunked {
			w.WriteString("Transfer-Encoding: chunked\r\n\r\n")
			for rest := body; len(rest) > 0; {
				n := min(len(rest), 64<<10)
				fmt.Fprintf(w, "%x\r\n", n)
				w.Write(rest[:n])
				if _, err := w.WriteString("\r\n"); err != nil {
					return // the server answered and closed
				}
				rest = rest[n:]
			}
			w.WriteString("0\r\n\r\n")
		} else {
			fmt.Fprintf(w, "Content-Length: %d\r\n\r\n", len(body))
			w.Write(body)
		}
		w.Flush()
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		b.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatalf("%s: reading the answer: %v", url, err)
	}
	return resp.StatusCode
}

// vmHWM is the process's peak resident set in KiB.
func vmHWM(b *testing.B, pid int) int {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				b.Fatal(err)
			}
			return kb
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}
