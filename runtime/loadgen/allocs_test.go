package loadgen_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// cannedStream is a streamed chat reply of four tokens with usage, chunked, in one write.
var cannedStream = func() []byte {
	events := []string{
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}`,
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}`,
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}`,
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":"length"}]}`,
		`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":4}}`,
		`[DONE]`,
	}
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, ev := range events {
		data := "data: " + ev + "\n\n"
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(data), data)
	}
	b.WriteString("0\r\n\r\n")
	return []byte(b.String())
}()

// cannedServer is a loopback HTTP/1.1 server that answers every request on a keep-alive
// connection with cannedStream and allocates nothing per request (a buffer per connection),
// so the process's allocations per request are the engine's own.
func cannedServer(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				defer served.Done()
				defer c.Close()
				br := bufio.NewReaderSize(c, 64<<10)
				for {
					length, ok := readRequestHead(br)
					if !ok {
						return
					}
					if _, err := br.Discard(length); err != nil {
						return
					}
					if _, err := c.Write(cannedStream); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); served.Wait() })
	return "http://" + l.Addr().String()
}

// readRequestHead reads a request's head and returns its Content-Length.
func readRequestHead(br *bufio.Reader) (length int, ok bool) {
	prefix := []byte("content-length:")
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return length, true
		}
		if len(line) > len(prefix) && bytes.EqualFold(line[:len(prefix)], prefix) {
			for _, d := range bytes.TrimSpace(line[len(prefix):]) {
				length = length*10 + int(d-'0')
			}
		}
	}
}

// allocConfig is a streamed chat run with a request timeout (the common benchmark-runner
// setting) and one request in flight, over the lean client.
func allocConfig(url string) loadgen.Config {
	cfg := baseConfig(url)
	cfg.RequestTimeout = time.Minute
	cfg.Concurrency = 1
	return cfg
}

func allocSchedule(n int) []loadgen.Request {
	schedule := make([]loadgen.Request, n)
	for i := range schedule {
		schedule[i] = loadgen.Request{InputTokens: 8, OutputTokens: 4}
	}
	return schedule
}

var discardRecords = loadgen.SinkFunc(func(loadgen.Record) error { return nil })

// BenchmarkStreamedRequest is one streamed request through the whole engine (body, request,
// SSE timing, record) over a keep-alive loopback connection: allocs/op and B/op are per request.
func BenchmarkStreamedRequest(b *testing.B) {
	url := cannedServer(b)
	cfg := allocConfig(url)
	schedule := allocSchedule(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	st, err := loadgen.Run(context.Background(), cfg, schedule, discardRecords)
	if err != nil || st.Successful != int64(b.N) {
		b.Fatalf("stats %+v, %v", st, err)
	}
}

// maxAllocsPerRequest is what a streamed request costs the engine in allocations, 10 when
// measured (31 before the request timeout became the connection's deadline and the run's stop
// one hook for all its requests, and h1's idle peek was made once per connection; BENCHMARKS.md,
// the load generator's allocations), plus a margin of two; more means something on the
// per-request path allocates again.
const maxAllocsPerRequest = 12

// The engine's allocations per request stay where they were brought down to: the difference
// between a run of 2n and a run of n requests, over n, so the run's own setup cancels out.
func TestAllocationsPerStreamedRequest(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector allocates on its own")
	}
	url := cannedServer(t)
	cfg := allocConfig(url)
	const n = 200
	runOf := func(requests int) float64 {
		schedule := allocSchedule(requests)
		return testing.AllocsPerRun(5, func() {
			st, err := loadgen.Run(context.Background(), cfg, schedule, discardRecords)
			if err != nil || st.Successful != int64(requests) {
				t.Fatalf("stats %+v, %v", st, err)
			}
		})
	}
	perRequest := (runOf(2*n) - runOf(n)) / n
	t.Logf("%.1f allocations per streamed request", perRequest)
	if perRequest > maxAllocsPerRequest {
		t.Errorf("%.1f allocations per streamed request, want <= %d", perRequest, maxAllocsPerRequest)
	}
}
