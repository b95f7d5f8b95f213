// Package h1 is the load engine's lean HTTP/1.1 client: what runtime/loadgen needs to post a
// JSON body to an OpenAI-compatible endpoint over http:// or https:// and read the response
// as it arrives, at thousands of requests in flight, with as little CPU and memory per request
// as the protocol allows.
//
// Why not net/http: its client costs, per open connection, a persistConn's two goroutines
// (readLoop and writeLoop) handing the request and response across channels, and per request a
// header map each way, context plumbing and the body's wrappers. Measured on a quiet host
// (BENCHMARKS.md, "Benchmark runs"): ~25 KiB per open connection here against ~43 KiB (a
// 100,000-request run at 4,096 in flight: 220 MB of runner RSS against 382 MB) and 0.85 of
// net/http's CPU per streamed request; most of what is left per streamed request is the socket
// wake-up and read per SSE event, which no client can skip.
// Why not fasthttp's client: it buffers a whole response body unless StreamResponseBody is set,
// cancels a request by context only through its own timeouts, and already has its home
// package in the simulator (tests/architecture gives each dependency one).
//
// What it does: one goroutine per request (the caller's): a pooled connection per request with
// keep-alive reuse (LIFO, idle ones closed after IdleTimeout, a connection the server closed
// while idle noticed before reuse by a non-blocking peek; one reused connection that fails a
// request is replaced once by a fresh one on net/http's rule: when nothing was written, or
// when the request is replayable (GET, HEAD, OPTIONS, TRACE, or an Idempotency-Key or
// X-Idempotency-Key header, any case, as net/http's Request.isReplayable; an empty value
// counts and is sent: net/http's zero-length value slice, which counts without going on the
// wire, has no equivalent in a Header)
// and no byte of a response arrived; the load engine's POSTs carry no such key, so the
// server's close before their answer is their error), the request written with one write
// from a pooled buffer, the status line and the few headers the engine reads parsed in place
// (Content-Length, Transfer-Encoding: chunked, Connection, Content-Type; no header map),
// chunked framing removed in place, and the body offered as Read and as Buffered/Peek/Discard
// over the connection's own small bufio.Reader, so the engine's SSE reader scans lines there
// with no second buffer per stream (net/http/httputil's chunked reader offers only Read, hence
// the forty lines of chunk parsing here). A request's context ending sets the connection's
// deadline in the past (context.AfterFunc), which unblocks any read or write at once; no
// goroutine waits for it. A Group does the same for many requests with one hook on its
// context (a load run's: the run's stop), its requests in flight linked through their
// connections, and Group.Do takes a request's deadline as its connection's: no context and
// no hook per request (which cost the engine ~10 of its 31 allocations per request). A
// connection that saw an error, a cancelled request, an unread body or Connection: close is
// closed, never reused. TLS uses crypto/tls with the caller's config (nil:
// the system roots, the server name verified, as net/http does), offering only http/1.1.
//
// What it does not do, left to net/http in runtime/loadgen: HTTP proxies, HTTP/2, redirects
// (a 3xx is returned as it is), request bodies other than a byte slice, response trailers
// (read and dropped), 1xx other than 100 Continue.
//
// It may import runtime/sockpeek (the peek at an idle connection) and the standard library.
package h1
