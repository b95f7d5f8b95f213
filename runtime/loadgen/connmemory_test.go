package loadgen_test

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// An open connection costs the engine a few KiB of heap, so a 4,096-wide closed loop fits the
// benchmark-runner's memory budget (issue 12: a 100,000-request benchmark in <= 200 MB). With
// 32 KiB read and write buffers per connection the loop held 256 MiB in buffers alone.
func TestOpenConnectionsCostAFewKilobytes(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 512 connections")
	}
	transports(t, openConnectionsCost)
}

func openConnectionsCost(t *testing.T, client *http.Client) {
	const conns = 512
	// A bare TCP server that takes each request and answers none of them until the run
	// ends, so every connection stays open with its request in flight; it allocates next to
	// nothing on the heap per connection (its goroutines' stacks are not heap).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	arrived := make(chan struct{}, conns)
	release := make(chan struct{})
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
				var buf [512]byte
				if _, err := c.Read(buf[:]); err != nil {
					return
				}
				arrived <- struct{}{}
				<-release
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); served.Wait() })

	cfg := loadgen.Config{BaseURL: "http://" + l.Addr().String(), Model: "m", API: loadgen.APICompletions, Stream: true,
		Concurrency: conns, Client: client, Seed: 1}
	schedule := make([]loadgen.Request, conns)
	for i := range schedule {
		schedule[i] = loadgen.Request{InputTokens: 64, OutputTokens: 16}
	}
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := loadgen.Run(ctx, cfg, schedule, loadgen.SinkFunc(func(loadgen.Record) error { return nil }))
		done <- err
	}()
	deadline := time.After(time.Minute)
	for range conns {
		select {
		case <-arrived:
		case <-deadline:
			t.Fatal("the requests did not all arrive within a minute")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&during)
	cancel()
	close(release)
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	perConn := float64(int64(during.HeapInuse)-int64(before.HeapInuse)) / conns / 1024
	stacks := float64(int64(during.StackInuse)-int64(before.StackInuse)) / conns / 1024
	t.Logf("%d open connections with a request in flight: %.1f KiB of heap and %.1f KiB of goroutine stacks each", conns, perConn, stacks)
	if perConn > 32 {
		t.Errorf("an open connection costs %.1f KiB of heap, want <= 32 KiB (the transport's per-connection buffers?)", perConn)
	}
	if client == nil && stacks > 16 && !raceDetector { // the detector's goroutines take bigger stacks
		// The lean client's request runs on its own goroutine only; net/http adds a read
		// and a write loop per connection.
		t.Errorf("an open connection of the lean client costs %.1f KiB of goroutine stacks, want <= 16 KiB (one goroutine)", stacks)
	}
}
