package redisstore

import (
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Embedded is an in-process Redis-compatible server (miniredis) listening on 127.0.0.1, so
// other processes of the local stack can reach it through URL. It is not durable.
type Embedded struct {
	server    *miniredis.Miniredis
	password  string
	stop      chan struct{}
	done      sync.WaitGroup
	closeOnce sync.Once
}

// expiryTick is how often the embedded server's clock is advanced.
const expiryTick = 20 * time.Millisecond

// StartEmbedded starts the server on a free loopback port, without a password (tests).
func StartEmbedded() (*Embedded, error) { return StartEmbeddedWithPassword("") }

// StartEmbeddedWithPassword starts the server on a free loopback port; with a password every
// connection must AUTH first (-NOAUTH otherwise), as a real redis-server with requirepass: any
// local user can reach a loopback port, and the store holds sealed keys and token hashes.
func StartEmbeddedWithPassword(password string) (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	if password != "" {
		m.RequireAuth(password)
	}
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("redisstore: start embedded Redis: %w", err)
	}
	e := &Embedded{server: m, password: password, stop: make(chan struct{})}
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

// URL is the redis:// address to pass to Open, with the password when there is one (never log it:
// Addr is for showing).
func (e *Embedded) URL() string {
	if e.password != "" {
		return (&url.URL{Scheme: "redis", User: url.UserPassword("", e.password), Host: e.server.Addr(), Path: "/0"}).String()
	}
	return "redis://" + e.server.Addr() + "/0"
}

// Addr is the server's host:port, without credentials.
func (e *Embedded) Addr() string { return e.server.Addr() }

// Close stops the server; its data is lost. Closing twice is harmless.
func (e *Embedded) Close() {
	e.closeOnce.Do(func() {
		close(e.stop)
		e.done.Wait()
		e.server.Close()
	})
}
