package fntest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// Outage is a state store a test can take away and bring back: an embedded server behind a TCP
// proxy on a fixed loopback address. Cut closes the proxy's listener and every connection
// through it (what clients see when redis-server dies); Restore listens on the same address again.
type Outage struct {
	// URL is the REDIS_URL of the store through the proxy.
	URL string

	t      testing.TB
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

// NewOutage starts the store and its proxy, stopped when the test ends.
func NewOutage(t testing.TB) *Outage {
	t.Helper()
	server, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	o := &Outage{t: t, target: strings.TrimSuffix(strings.TrimPrefix(server.URL(), "redis://"), "/0")}
	o.Restore()
	o.URL = "redis://" + o.addr + "/0"
	t.Cleanup(o.Cut)
	return o
}

// Restore makes the store reachable again.
func (o *Outage) Restore() {
	o.t.Helper()
	addr := o.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		o.t.Fatal(err)
	}
	o.mu.Lock()
	o.ln, o.addr = ln, ln.Addr().String()
	o.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", o.target)
			if err != nil {
				c.Close()
				continue
			}
			o.mu.Lock()
			o.conns = append(o.conns, c, up)
			o.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// Cut makes the store unreachable.
func (o *Outage) Cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln != nil {
		o.ln.Close()
		o.ln = nil
	}
	for _, c := range o.conns {
		c.Close()
	}
	o.conns = nil
}
