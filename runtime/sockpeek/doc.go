// Package sockpeek owns the one raw-syscall look at a connection's socket that tells whether
// the peer is still there without reading anything: a pooled Redis connection before it is
// lent again (runtime/state/redisstore), an idle keep-alive connection before the load
// engine's client reuses it (runtime/loadgen/internal/h1), and the inference simulator's
// watch for a client that left while its request waits (functions/inferencesim).
//
// A Peeker is made once per connection from its syscall.RawConn and peeks with
// recv(MSG_PEEK|MSG_DONTWAIT), so a byte that is there stays for the connection's own reader
// and a look allocates nothing. Now looks without blocking; Wait blocks in the runtime's
// poller until the socket is readable, and a read deadline ends the wait. Both answer with a
// State: Idle (nothing to read), Pending (bytes to read), Closed (EOF or a socket error, kept
// in Err), or Interrupted (the poller ended the call: a read deadline passed or this side
// closed the connection). What a state means for the connection is the caller's rule: over
// TLS, for one, Pending may be a record the TLS layer reads itself.
//
// On Unix but AIX (whose syscall package has no MSG_DONTWAIT); elsewhere New reports every
// connection unsupported (nil), as it does a connection that is not a syscall.Conn.
//
// It imports only the standard library, and nothing of ours.
package sockpeek
