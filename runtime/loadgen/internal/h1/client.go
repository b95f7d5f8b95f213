package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lensfn/lensfn/runtime/sockpeek"
)

// Dialer opens a connection (net.Dialer.DialContext, or an egress policy's).
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Options tune a Client; the zero value of each field is its default.
type Options struct {
	// Dial opens every connection; nil dials directly (30 s timeout, 30 s TCP keep-alive).
	Dial Dialer
	// TLS is the configuration of https connections (cloned; ServerName is set per target when
	// empty, NextProtos to http/1.1). nil: the system roots, the server's name verified.
	TLS *tls.Config
	// IdleTimeout closes a keep-alive connection idle longer than this (default 90 s).
	IdleTimeout time.Duration
	// MaxIdlePerHost bounds the idle connections kept per target (default 65,536: an
	// open-loop replay may have thousands in flight and needs them all back).
	MaxIdlePerHost int
	// ReadBufferSize is each connection's read buffer, which also bounds a status or header
	// line (default 4 KiB).
	ReadBufferSize int
	// TLSHandshakeTimeout bounds a TLS handshake (default 10 s).
	TLSHandshakeTimeout time.Duration
}

// Client sends requests over pooled HTTP/1.1 connections. It is safe for concurrent use.
type Client struct {
	opts Options
	tls  *tls.Config

	mu     sync.Mutex
	idle   map[string][]*conn // by Target.key, most recently used last
	closed bool
}

// New returns a client with o's settings.
func New(o Options) *Client {
	if o.Dial == nil {
		o.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 90 * time.Second
	}
	if o.MaxIdlePerHost <= 0 {
		o.MaxIdlePerHost = 1 << 16
	}
	if o.ReadBufferSize <= 0 {
		o.ReadBufferSize = 4 << 10
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = 10 * time.Second
	}
	c := &Client{opts: o, idle: make(map[string][]*conn)}
	if o.TLS != nil {
		c.tls = o.TLS.Clone()
	} else {
		c.tls = &tls.Config{}
	}
	c.tls.NextProtos = []string{"http/1.1"}
	return c
}

// Target is where requests go: a method and an absolute http(s) URL, parsed once so a request
// costs no URL handling.
type Target struct {
	key        string // scheme://host:port, the pool's key
	addr       string // host:port to dial
	serverName string // TLS server name
	secure     bool
	idempotent bool   // the method is one net/http resends: GET, HEAD, OPTIONS, TRACE
	head       string // request line and Host header
}

// NewTarget parses rawURL (http or https, no user info) for requests with method.
func NewTarget(method, rawURL string) (*Target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("h1: scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("h1: URL %q needs a host and no user info", u.Redacted())
	}
	if !validToken(method) {
		return nil, fmt.Errorf("h1: bad method %q", method)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr := net.JoinHostPort(host, port)
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return &Target{key: u.Scheme + "://" + addr, addr: addr, serverName: host, secure: u.Scheme == "https",
		idempotent: method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE",
		head:       method + " " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\n"}, nil
}

// Header is one request header.
type Header struct{ Name, Value string }

// ErrBadHeader: a request header's name is not a token or its value holds a line break (which
// would let a value inject headers).
var ErrBadHeader = errors.New("h1: invalid request header")

// requestBuffers recycle the buffers requests are written from; one bigger than
// maxPooledRequest (a very long prompt) is left to the collector.
var requestBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

const maxPooledRequest = 256 << 10

// aLongTimeAgo is a deadline in the past: setting it fails a blocked read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

// Do sends one request with headers (Host and Content-Length are added) and body, and returns
// the response once its header has arrived. The caller must Close the response's body. ctx
// bounds the whole exchange, reading the body included, until Close: its end sets the
// connection's deadline in the past through a context.AfterFunc of the request's own.
func (c *Client) Do(ctx context.Context, t *Target, headers []Header, body []byte) (*Response, error) {
	return c.do(ctx, nil, time.Time{}, t, headers, body)
}

// do is Do (group nil: ctx's end is watched for this request alone) and Group.Do (ctx is the
// group's, which watches it for all its requests; deadline, when set, is the connection's).
func (c *Client) do(ctx context.Context, g *Group, deadline time.Time, t *Target, headers []Header, body []byte) (*Response, error) {
	bp := requestBuffers.Get().(*[]byte)
	req, err := appendRequest((*bp)[:0], t, headers, body)
	// The buffer goes back once the request is written, not when the response comes: at
	// thousands in flight, waiting requests would otherwise each hold one. (A replayable
	// request on a reused connection keeps it until the response starts: it may be resent.)
	release := func() {
		if bp != nil && cap(req) <= maxPooledRequest {
			*bp = req[:0]
			requestBuffers.Put(bp)
		}
		bp = nil
	}
	defer release()
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx) // as after a send the context's end cut short
	}
	if pastDeadline(deadline) {
		return nil, fmt.Errorf("h1: the request's deadline passed before it was sent: %w", os.ErrDeadlineExceeded)
	}
	replayable := t.idempotent || hasIdempotencyKey(headers)
	for attempt := 0; ; attempt++ {
		cn, reused, err := c.get(ctx, deadline, t)
		if err != nil {
			return nil, err
		}
		w := watch{group: g}
		if g == nil {
			w.stop = context.AfterFunc(ctx, func() { _ = cn.nc.SetDeadline(aLongTimeAgo) })
		} else if !g.enter(cn, deadline) {
			cn.close()
			return nil, fmt.Errorf("%w (h1: the request's group ended before it was sent)", context.Cause(ctx))
		}
		retry := false
		var n int
		if n, err = cn.nc.Write(req); err == nil {
			mayResend := reused && attempt == 0 && replayable
			if !mayResend {
				release()
			}
			var resp *Response
			if resp, err = readResponse(c, cn, t.key, w, deadline); err == nil {
				return resp, nil
			}
			// Nothing of a response arrived: the server closed or reset a connection it
			// may have been closing while the request was written (the keep-alive race).
			var early *beforeResponseError
			retry = errors.As(err, &early) && mayResend
		} else {
			err = fmt.Errorf("writing the request: %w", err)
			retry = n == 0 || replayable
		}
		w.end(cn)
		cn.close()
		// net/http's rule (Transport's shouldRetryRequest): only a reused connection, once,
		// on a fresh one (a fresh connection's failure is the answer), and only when nothing
		// was written, or the request is replayable and no byte of a response was read.
		if reused && attempt == 0 && retry && ctx.Err() == nil && !pastDeadline(deadline) {
			continue
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%w)", context.Cause(ctx), err)
		}
		return nil, err
	}
}

// pastDeadline: deadline is set and has passed.
func pastDeadline(deadline time.Time) bool { return !deadline.IsZero() && !time.Now().Before(deadline) }

// watch is what ends one request's I/O early: its own context hook (Do) or its group (Group.Do).
type watch struct {
	stop  func() bool // Do's context.AfterFunc stop; false once the hook ran
	group *Group
}

// end stops watching the request on cn; false means its end already came and set the
// connection's deadline in the past, so the connection must not be reused.
func (w watch) end(cn *conn) bool {
	if w.group != nil {
		return w.group.leave(cn)
	}
	return w.stop()
}

// A Group is requests that end together when one context ends, as a load run's requests do
// when the run stops: one context.AfterFunc for the group sets the deadline of every
// connection it has in flight in the past, where Do registers one hook per request (a
// context.AfterFunc costs a handful of allocations each time). Its requests also take their
// own deadline, the connection's, where Do would need a context per request for it.
type Group struct {
	client   *Client
	ctx      context.Context
	stopHook func() bool

	mu       sync.Mutex
	ended    bool  // ctx ended: every connection in flight was given a past deadline
	inFlight *conn // the connections of the group's requests in flight, linked by conn.next
}

// Group returns a group whose requests end when ctx does. Close it when no more requests
// will be sent through it.
func (c *Client) Group(ctx context.Context) *Group {
	g := &Group{client: c, ctx: ctx}
	g.stopHook = context.AfterFunc(ctx, g.endAll)
	return g
}

// Close stops watching the group's context; requests in flight are left to run.
func (g *Group) Close() { g.stopHook() }

// Do is Client.Do for a request of the group: the group's context bounds it as a request's
// own context bounds Client.Do, dialling included; deadline (zero: none) bounds the whole
// exchange, reading the body included, as the connection's deadline. A request past its
// deadline fails with an error that errors.Is os.ErrDeadlineExceeded; one the group's end stopped,
// with one that wraps the context's cause.
func (g *Group) Do(deadline time.Time, t *Target, headers []Header, body []byte) (*Response, error) {
	return g.client.do(g.ctx, g, deadline, t, headers, body)
}

// endAll is the group context's hook.
func (g *Group) endAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ended = true
	for cn := g.inFlight; cn != nil; cn = cn.next {
		_ = cn.nc.SetDeadline(aLongTimeAgo)
	}
}

// enter sets cn's deadline for a request and lists it in flight; false when the group has
// ended. Under the lock, so endAll's past deadline cannot be overwritten.
func (g *Group) enter(cn *conn, deadline time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended || cn.nc.SetDeadline(deadline) != nil {
		return false
	}
	cn.prev, cn.next = nil, g.inFlight
	if g.inFlight != nil {
		g.inFlight.prev = cn
	}
	g.inFlight = cn
	return true
}

// leave takes cn off the in-flight list; false when the group ended while it was listed.
func (g *Group) leave(cn *conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cn.prev != nil {
		cn.prev.next = cn.next
	} else {
		g.inFlight = cn.next
	}
	if cn.next != nil {
		cn.next.prev = cn.prev
	}
	cn.prev, cn.next = nil, nil
	return !g.ended
}

// setReadDeadline is Body.SetReadDeadline for a request of the group: an ended group's past
// deadline stays.
func (g *Group) setReadDeadline(cn *conn, t time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return nil
	}
	return cn.nc.SetReadDeadline(t)
}

// hasIdempotencyKey: the headers mark a request as safe to send twice (net/http's
// Request.isReplayable: the non-standard but widely used Idempotency-Key, or X-Idempotency-Key).
func hasIdempotencyKey(headers []Header) bool {
	for _, h := range headers {
		if strings.EqualFold(h.Name, "Idempotency-Key") || strings.EqualFold(h.Name, "X-Idempotency-Key") {
			return true
		}
	}
	return false
}

// beforeResponseError: reading failed before the first byte of a response (an EOF is
// errClosedBeforeResponse, net/http's errServerClosedIdle; otherwise a reset or other read
// error, its transportReadFromServerError).
type beforeResponseError struct{ err error }

func (e *beforeResponseError) Error() string { return e.err.Error() }
func (e *beforeResponseError) Unwrap() error { return e.err }

func readResponse(c *Client, cn *conn, key string, w watch, deadline time.Time) (*Response, error) {
	if _, err := cn.br.Peek(1); err != nil {
		if err == io.EOF {
			err = errClosedBeforeResponse
		}
		return nil, &beforeResponseError{err}
	}
	resp := &Response{body: Body{cn: cn, client: c, key: key, watch: w, deadline: deadline}}
	if err := readHead(cn.br, resp); err != nil {
		return nil, err
	}
	resp.Body = &resp.body
	return resp, nil
}

func appendRequest(b []byte, t *Target, headers []Header, body []byte) ([]byte, error) {
	b = append(b, t.head...)
	for _, h := range headers {
		if !validToken(h.Name) || strings.ContainsAny(h.Value, "\r\n\x00") {
			return b, fmt.Errorf("%w %q", ErrBadHeader, h.Name)
		}
		b = append(b, h.Name...)
		b = append(b, ": "...)
		b = append(b, h.Value...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...), nil
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// conn is one pooled connection.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	idleAt time.Time
	peek   *sockpeek.Peeker // made once, so a reuse's look allocates nothing; nil: cannot look
	secure bool             // TLS: pending bytes may be a record the TLS layer reads itself
	// prev and next link the connection into its Group's in-flight list while it serves a
	// request of the group.
	prev, next *conn
}

func (cn *conn) close() { _ = cn.nc.Close() }

// alive reports whether an idle connection is still open: nothing to read means the server
// has neither closed it nor sent bytes out of turn. One non-blocking peek, so a connection the
// server closed while idle is not written a request that then fails. Under TLS pending bytes
// may be a record the TLS layer reads itself (a TLS 1.3 session ticket), so only the server's
// close counts there. A connection that cannot be looked at counts as open: if it is dead its
// write fails, which Do retries once on a fresh connection.
func (cn *conn) alive() bool {
	if cn.peek == nil {
		return true
	}
	switch cn.peek.Now() {
	case sockpeek.Idle:
		return true
	case sockpeek.Pending:
		return cn.secure
	}
	return false
}

// get returns an idle connection to t that is still open, or dials a new one.
// A new connection's dial and TLS handshake are bounded by ctx and deadline (zero: none).
func (c *Client) get(ctx context.Context, deadline time.Time, t *Target) (cn *conn, reused bool, err error) {
	now := time.Now()
	for {
		c.mu.Lock()
		list := c.idle[t.key]
		if len(list) == 0 {
			c.mu.Unlock()
			break
		}
		cn = list[len(list)-1]
		list[len(list)-1] = nil
		c.idle[t.key] = list[:len(list)-1]
		c.mu.Unlock()
		if now.Sub(cn.idleAt) > c.opts.IdleTimeout || !cn.alive() {
			cn.close()
			continue
		}
		return cn, true, nil
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	nc, err := c.opts.Dial(ctx, "tcp", t.addr)
	if err != nil {
		return nil, false, fmt.Errorf("dial %s: %w", t.addr, err)
	}
	if t.secure {
		cfg := c.tls
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = t.serverName
		}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithTimeout(ctx, c.opts.TLSHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = nc.Close()
			return nil, false, fmt.Errorf("TLS handshake with %s: %w", t.addr, err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
			_ = nc.Close()
			return nil, false, fmt.Errorf("h1: the server chose protocol %q", p)
		}
		nc = tc
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, c.opts.ReadBufferSize), peek: sockpeek.New(nc), secure: t.secure}, false, nil
}

// put returns a connection whose response was read to its end to the pool.
func (c *Client) put(t string, cn *conn) {
	if cn.br.Buffered() > 0 || cn.nc.SetDeadline(time.Time{}) != nil {
		cn.close() // bytes nobody asked for: the stream is out of step
		return
	}
	cn.idleAt = time.Now()
	c.mu.Lock()
	if c.closed || len(c.idle[t]) >= c.opts.MaxIdlePerHost {
		c.mu.Unlock()
		cn.close()
		return
	}
	c.idle[t] = append(c.idle[t], cn)
	c.mu.Unlock()
}

// CloseIdle closes every idle connection; connections in use close when their response is done.
// The client stays usable.
func (c *Client) CloseIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = make(map[string][]*conn)
	c.mu.Unlock()
	for _, list := range idle {
		for _, cn := range list {
			cn.close()
		}
	}
}

// Close closes the idle connections and keeps no more: a connection in use closes when its
// response is done.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.CloseIdle()
}

// IdleConns is how many idle connections the pool holds (for tests and metrics).
func (c *Client) IdleConns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, list := range c.idle {
		n += len(list)
	}
	return n
}
