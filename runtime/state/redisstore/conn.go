package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/lensfn/lensfn/runtime/sockpeek"
)

// Timeouts of one command: it waits at most readTimeout for its reply (less when its context
// ends sooner), a blocking read its BLOCK plus blockSlack.
const (
	dialTimeout  = 5 * time.Second
	readTimeout  = 3 * time.Second
	writeTimeout = 3 * time.Second
	blockSlack   = 10 * time.Second
	// poolTimeout bounds the wait for a free connection when the caller's context does not.
	poolTimeout = readTimeout + time.Second
	// idleTimeout closes connections unused this long.
	idleTimeout = 30 * time.Minute
	// pingAfterIdle: a borrowed connection whose socket cannot be checked (a platform without
	// the check) is pinged first when it was idle this long, so a restarted server does not fail
	// the first command.
	pingAfterIdle = 2 * time.Second
)

// errStoreClosed is what operations return after Close: our own shutdown, not an outage.
var errStoreClosed = errors.New("redisstore: the store is closed")

// endpoint is what a Redis URL says: where to dial and how to log in.
type endpoint struct {
	addr     string // host:port, safe to show
	username string
	password string
	db       int
	tls      *tls.Config // nil for redis://
}

// parseURL reads redis://[user:password@]host:port/db or rediss://... (TLS). Its errors never
// repeat the URL: it may carry a password.
func parseURL(raw string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// Neither url.Error (the whole URL) nor its cause ("invalid port \":ab\" after host" for a
		// password with an unescaped '?' or '/') may be shown: both can carry the password.
		return endpoint{}, errors.New("not a valid URL (percent-encode any '/', '?', '#' or '@' in the password)")
	}
	var ep endpoint
	switch u.Scheme {
	case "redis":
	case "rediss":
	default:
		return endpoint{}, fmt.Errorf("scheme %q is not redis:// or rediss://", u.Scheme)
	}
	if u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" {
		return endpoint{}, errors.New("a Redis URL is redis://[user:password@]host:port/db, without query or fragment")
	}
	host, port := u.Hostname(), u.Port() // Hostname drops an IPv6 literal's brackets
	if port == "" {
		port = "6379"
	}
	if host == "" {
		host = "localhost"
	}
	ep.addr = net.JoinHostPort(host, port)
	if u.User != nil {
		ep.username = u.User.Username()
		ep.password, _ = u.User.Password()
	}
	if path := strings.TrimPrefix(u.Path, "/"); path != "" {
		db, err := strconv.Atoi(path)
		if err != nil || db < 0 {
			return endpoint{}, fmt.Errorf("database %q is not a number", path)
		}
		ep.db = db
	}
	if u.Scheme == "rediss" {
		ep.tls = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	return ep, nil
}

// checkedConn is a pooled connection together with its socket, so a borrowed connection the
// server has closed meanwhile (a restart) is noticed before a command is sent on it.
//
// Over TLS the check looks at the TCP socket under the TLS layer too: nothing to read (alive) and
// EOF (closed) consume nothing, and a byte it does read (a TLS record pending on an idle
// connection) fails the check, so that connection, out of step now, is closed and another
// dialed. Without the check, a TLS connection idle under pingAfterIdle would carry the first
// command after a restart onto a dead socket.
type checkedConn struct {
	redisConn
	socket net.Conn
	// peek is made once per connection, so a borrow allocates nothing; nil where the socket
	// cannot be looked at (PING after pingAfterIdle instead).
	peek *sockpeek.Peeker
}

var errUnexpectedRead = errors.New("redisstore: unexpected data on an idle connection")

// socketAlive looks, without blocking, at an idle connection's socket before it is lent out
// again: nothing to read means alive, EOF that the server closed it, data that the
// connection is out of step.
func (c *checkedConn) socketAlive() error {
	// redigo leaves the last command's read deadline set; an expired one would fail the
	// check without looking at the socket.
	if err := c.socket.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	switch c.peek.Now() {
	case sockpeek.Idle:
		return nil
	case sockpeek.Pending:
		return errUnexpectedRead
	}
	return c.peek.Err()
}

type redisConn interface {
	redis.ConnWithTimeout
	redis.ConnWithContext
}

// newPool makes the connection pool. It does not limit or wait itself (MaxActive 0): the Store's
// slots do, because redigo bounds its wait only by a context, a timer per borrowed connection
// when the caller's context has no deadline.
func newPool(ep endpoint, size int) *redis.Pool {
	return &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) { return dial(ctx, ep) },
		TestOnBorrow: func(c redis.Conn, lastUsed time.Time) error {
			if cc, ok := c.(*checkedConn); ok && cc.peek != nil {
				return cc.socketAlive()
			}
			if time.Since(lastUsed) < pingAfterIdle {
				return nil
			}
			_, err := c.Do("PING")
			return err
		},
		MaxIdle:     size,
		IdleTimeout: idleTimeout,
	}
}

func dial(ctx context.Context, ep endpoint) (redis.Conn, error) {
	// AUTH and SELECT follow ctx: bound it, or a server that accepts but never answers would
	// hold the caller.
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var socket net.Conn
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 5 * time.Minute}
	opts := []redis.DialOption{
		redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			socket = c
			return c, err
		}),
		redis.DialReadTimeout(readTimeout),
		redis.DialWriteTimeout(writeTimeout),
		redis.DialDatabase(ep.db),
	}
	if ep.password != "" {
		opts = append(opts, redis.DialUsername(ep.username), redis.DialPassword(ep.password))
	}
	if ep.tls != nil {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(ep.tls), redis.DialTLSHandshakeTimeout(dialTimeout))
	}
	c, err := redis.DialContext(ctx, "tcp", ep.addr, opts...)
	if err != nil {
		return nil, err
	}
	rc, ok := c.(redisConn)
	if !ok {
		_ = c.Close()
		return nil, errors.New("redisstore: the Redis connection does not take timeouts")
	}
	// socket is the TCP connection, under the TLS layer for rediss://
	return &checkedConn{redisConn: rc, socket: socket, peek: sockpeek.New(socket)}, nil
}

// errPoolTimeout: every connection stayed busy for poolTimeout (an outage).
var errPoolTimeout = errors.New("redisstore: every connection to Redis stayed busy")

// conn borrows a pooled connection; the caller gives it back with release. When all PoolSize
// connections are out, it waits until ctx ends, or poolTimeout when ctx has no sooner deadline.
func (s *Store) conn(ctx context.Context) (redis.Conn, error) {
	if s.closed.Load() {
		return nil, errStoreClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case s.slots <- struct{}{}:
	default:
		if err := s.waitSlot(ctx); err != nil {
			return nil, err
		}
	}
	c, err := s.pool.GetContext(ctx)
	if err != nil {
		<-s.slots
		if s.closed.Load() {
			return nil, errStoreClosed
		}
		return nil, fmt.Errorf("redisstore: no connection to Redis at %s: %w", s.addr, err)
	}
	return c, nil
}

func (s *Store) waitSlot(ctx context.Context) error {
	wait := time.NewTimer(poolTimeout)
	defer wait.Stop()
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("redisstore: waiting for a free connection to Redis at %s: %w", s.addr, ctx.Err())
	case <-wait.C:
		return fmt.Errorf("%w for %s (pool of %d)", errPoolTimeout, poolTimeout, cap(s.slots))
	}
}

// release gives a borrowed connection back to the pool (closing it after a network error).
func (s *Store) release(c redis.Conn) {
	_ = c.Close()
	<-s.slots
}

// endsSoon says whether ctx ends before a command's default read timeout: then the command
// follows ctx (redigo's DoContext, a goroutine per command), else the connection's own
// timeouts bound it.
func endsSoon(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < readTimeout
}

// do runs one command on a pooled connection.
func (s *Store) do(ctx context.Context, cmd string, args ...any) (any, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(c)
	if endsSoon(ctx) {
		return redis.DoContext(c, ctx, cmd, args...)
	}
	return c.Do(cmd, args...)
}

// eval runs a script with EVALSHA, falling back to EVAL when the server lost it (a restart).
func (s *Store) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(c)
	// One slice for EVALSHA's arguments: the hash, the key count, keys, then args.
	evalArgs := make([]any, 0, 2+len(keys)+len(args))
	evalArgs = append(evalArgs, script.Hash(), len(keys))
	for _, k := range keys {
		evalArgs = append(evalArgs, k)
	}
	evalArgs = append(evalArgs, args...)
	var reply any
	if endsSoon(ctx) {
		reply, err = redis.DoContext(c, ctx, "EVALSHA", evalArgs...)
	} else {
		reply, err = c.Do("EVALSHA", evalArgs...)
	}
	if e, ok := err.(redis.Error); ok && strings.HasPrefix(string(e), "NOSCRIPT ") {
		// redigo's Script sends EVAL when EVALSHA finds no script.
		if endsSoon(ctx) {
			return script.DoContext(ctx, c, evalArgs[1:]...)
		}
		return script.Do(c, evalArgs[1:]...)
	}
	return reply, err
}

// command is one command of a pipeline.
type command struct {
	name string
	args []any
}

// pipeline sends the commands on one connection in one write and returns their replies in
// order; the first error reply is returned as the error.
func (s *Store) pipeline(ctx context.Context, cmds []command) ([]any, error) {
	return s.batch(ctx, cmds, false)
}

// transaction runs the commands in MULTI/EXEC and returns EXEC's replies.
func (s *Store) transaction(ctx context.Context, cmds []command) ([]any, error) {
	return s.batch(ctx, cmds, true)
}

func (s *Store) batch(ctx context.Context, cmds []command, atomic bool) ([]any, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(c)
	final := "" // Do("") flushes and reads every pending reply
	if atomic {
		final = "EXEC" // Do("EXEC") returns EXEC's reply, the first error reply before it as err
		if err := c.Send("MULTI"); err != nil {
			return nil, err
		}
	}
	for _, cmd := range cmds {
		if err := c.Send(cmd.name, cmd.args...); err != nil {
			return nil, err
		}
	}
	var reply any
	if endsSoon(ctx) {
		reply, err = redis.DoContext(c, ctx, final)
	} else {
		reply, err = c.Do(final)
	}
	replies, err := redis.Values(reply, err)
	if err != nil {
		return nil, err
	}
	if len(replies) != len(cmds) {
		return nil, fmt.Errorf("redisstore: %d replies to %d commands", len(replies), len(cmds))
	}
	for _, r := range replies {
		if e, ok := r.(redis.Error); ok {
			return nil, e
		}
	}
	return replies, nil
}

// text is a bulk or status reply as a string ("" for nil or another type).
func text(v any) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	}
	return ""
}
