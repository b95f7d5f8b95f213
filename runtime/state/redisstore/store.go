package redisstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/lensfn/lensfn/runtime/state"
)

// Options tune a Store. The zero value is usable.
type Options struct {
	// Prefix starts every key; it must contain a hash tag ("{v1}") and end with ':'.
	// Default DefaultPrefix. Tests use a unique prefix per test.
	Prefix string
	// Observe, when set, is called after every store operation with its name ("create",
	// "list", "lease.acquire"...), duration and error.
	Observe state.Observer
	// StreamMaxLen caps each progress stream approximately (XADD MAXLEN ~). Default 10000.
	StreamMaxLen int64
	// LogCap is the number of log lines kept per record. Default 500, at most 5000.
	LogCap int
	// ListCacheTTL is how long a combined filter set is kept for the next pages. Default 10s.
	ListCacheTTL time.Duration
	// PoolSize overrides the connection pool size (default 10 per CPU).
	PoolSize int
	// TLSCAFile is a PEM file of the CA certificates a rediss:// server's certificate must chain
	// to, for a server whose CA is private (REDIS_CA_FILE in the runtime). Empty: the system's
	// roots. Setting it for a redis:// URL is refused: that connection would not use TLS.
	TLSCAFile string
}

func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := validatePrefix(o.Prefix); err != nil {
		return o, err
	}
	if o.StreamMaxLen == 0 {
		o.StreamMaxLen = 10000
	}
	if o.LogCap == 0 {
		o.LogCap = 500
	}
	if o.StreamMaxLen < 0 || o.LogCap < 0 || o.LogCap > 5000 || o.ListCacheTTL < 0 ||
		(o.ListCacheTTL > 0 && o.ListCacheTTL < time.Millisecond) || o.PoolSize < 0 {
		return o, fmt.Errorf("redisstore: options out of range (stream max len %d, log cap %d (1-5000), list cache TTL %s (>= 1ms), pool size %d)",
			o.StreamMaxLen, o.LogCap, o.ListCacheTTL, o.PoolSize)
	}
	if o.ListCacheTTL == 0 {
		o.ListCacheTTL = 10 * time.Second
	}
	return o, nil
}

// Store is the Redis implementation of state.Store. It is safe for concurrent use.
type Store struct {
	pool  *redis.Pool
	slots chan struct{} // one per connection that may be out of the pool at a time
	// blockers bounds the connections blocking reads (XREAD BLOCK) hold at once: a quarter of
	// the pool, so open event streams can never take the connections every other operation
	// needs (progress.go).
	blockers chan struct{}
	addr     string // host:port, for messages (never the URL: it may carry a password)
	closed   atomic.Bool
	keys     keyspace
	opts     Options
}

var _ state.Store = (*Store)(nil)

// Open connects to redisURL (redis://[user:password@]host:port/db or rediss://...), checks
// the server answers and loads the scripts.
func Open(ctx context.Context, redisURL string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ep, err := parseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("redisstore: invalid Redis URL: %w", err)
	}
	if opts.TLSCAFile != "" {
		if ep.tls == nil {
			return nil, fmt.Errorf("redisstore: a TLS CA file (%s) is given for Redis at %s, but its URL is redis://, which does not use TLS (use rediss://)", opts.TLSCAFile, ep.addr)
		}
		if ep.tls.RootCAs, err = loadCAFile(opts.TLSCAFile); err != nil {
			return nil, err
		}
	}
	size := opts.PoolSize
	if size == 0 {
		size = 10 * runtime.GOMAXPROCS(0)
	}
	s := &Store{pool: newPool(ep, size), slots: make(chan struct{}, size), blockers: make(chan struct{}, max(1, size/4)),
		addr: ep.addr, keys: keyspace{prefix: opts.Prefix}, opts: opts}
	if _, err := s.do(ctx, "PING"); err != nil {
		_ = s.Close()
		if untrusted := (*tls.CertificateVerificationError)(nil); errors.As(err, &untrusted) {
			return nil, fmt.Errorf("redisstore: the TLS certificate of Redis at %s is not trusted (is TLSCAFile, REDIS_CA_FILE, the CA that signed it?): %w", ep.addr, err)
		}
		return nil, fmt.Errorf("redisstore: Redis at %s does not answer: %w", ep.addr, err)
	}
	if err := s.loadScripts(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("redisstore: loading scripts into Redis at %s: %w", ep.addr, err)
	}
	return s, nil
}

// loadCAFile reads the PEM certificates a TLS server's certificate may chain to.
func loadCAFile(path string) (*x509.CertPool, error) {
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("redisstore: reading the TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("redisstore: the TLS CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

func (s *Store) loadScripts(ctx context.Context) error {
	c, err := s.conn(ctx)
	if err != nil {
		return err
	}
	defer s.release(c)
	for _, script := range allScripts {
		if err := script.Load(c); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the connections; later operations fail (not as an outage).
func (s *Store) Close() error {
	s.closed.Store(true)
	return s.pool.Close()
}

// Ping checks the server answers.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer s.observe("ping", time.Now(), &err)
	_, err = s.do(ctx, "PING")
	return err
}

// Incr increments the named counter.
func (s *Store) Incr(ctx context.Context, name string) (n int64, err error) {
	defer s.observe("incr", time.Now(), &err)
	if err := state.ValidateKey("counter name", name); err != nil {
		return 0, err
	}
	return redis.Int64(s.do(ctx, "INCR", s.keys.counter(name)))
}

// observe runs after every operation: it marks errors that mean the server cannot be reached
// with state.ErrUnavailable, then reports the operation.
func (s *Store) observe(op string, start time.Time, err *error) {
	if *err != nil && unreachable(*err) && !errors.Is(*err, state.ErrUnavailable) {
		*err = fmt.Errorf("%w: %w", state.ErrUnavailable, *err)
	}
	if s.opts.Observe != nil {
		s.opts.Observe(op, time.Since(start), *err)
	}
}

// unreachable says whether err means Redis did not answer rather than refused the command: a
// network error, a dropped connection, an exhausted pool, or a server still loading its data.
func unreachable(err error) bool {
	var netErr net.Error
	var redisErr redis.Error
	switch {
	case errors.As(err, &redisErr):
		msg := redisErr.Error()
		return strings.HasPrefix(msg, "LOADING ") || strings.HasPrefix(msg, "MASTERDOWN ")
	case errors.Is(err, errStoreClosed), errors.Is(err, context.Canceled):
		return false // our own shutdown or the caller gave up
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, errPoolTimeout), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

// scriptError maps the LENS_* replies of the scripts to state errors.
func scriptError(err error, what string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "LENS_EXISTS"):
		return fmt.Errorf("%w: %s", state.ErrExists, what)
	case strings.Contains(msg, "LENS_NOTFOUND"):
		return fmt.Errorf("%w: %s", state.ErrNotFound, what)
	case strings.Contains(msg, "LENS_VERSION"):
		return fmt.Errorf("%w: %s changed since it was read", state.ErrVersionConflict, what)
	case strings.Contains(msg, "LENS_STALEFENCE"):
		return fmt.Errorf("%w: %s was written under a newer lease", state.ErrStaleFence, what)
	}
	return fmt.Errorf("redisstore: %s: %w", what, err)
}

func ms(t time.Time) int64 { return t.UnixMilli() }
