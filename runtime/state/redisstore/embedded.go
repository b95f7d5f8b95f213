package redisstore

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Embedded is an in-process Redis-compatible server (miniredis) listening on 127.0.0.1, so
// other processes of the local stack can reach it through URL. It is not durable.
type Embedded struct {
	server    *miniredis.Miniredis
	stop      chan struct{}
	done      sync.WaitGroup
	closeOnce sync.Once
}

// expiryTick is how often the embedded server's clock is advanced.
const expiryTick = 20 * time.Millisecond

// StartEmbedded starts the server on a free loopback port.
func StartEmbedded() (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("redisstore: start embedded Redis: %w", err)
	}
	e := &Embedded{server: m, stop: make(chan struct{})}
	// miniredis only expires keys when told time has passed; advance it with the wall clock
	// so leases and claims expire as they would on a real server.
	e.done.Add(1)
	go func() {
		defer e.done.Done()
		t := time.NewTicker(expiryTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-e.stop:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return e, nil
}

// URL is the redis:// address to pass to Open.
func (e *Embedded) URL() string { return "redis://" + e.server.Addr() + "/0" }

// Close stops the server; its data is lost. Closing twice is harmless.
func (e *Embedded) Close() {
	e.closeOnce.Do(func() {
		close(e.stop)
		e.done.Wait()
		e.server.Close()
	})
}
