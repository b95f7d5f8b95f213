package inferencerouter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// upstream is what the router needs of a replica's HTTP client: one call
// with a whole-request deadline (a *fasthttp.HostClient; the in-memory
// benchmark substitutes a canned one).
type upstream interface {
	DoDeadline(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error
}

// newHostClient is the pooled HTTP/1.1 client of one replica. Replicas are
// loopback or in-cluster peers, so the client is lean: no User-Agent of its
// own, header names and paths passed through as the client sent them, and
// response bodies streamed (StreamResponseBody) so an SSE stream reaches the
// client chunk by chunk and no answer is ever buffered whole in the router.
// A POST is never replayed (MaxIdemponentCallAttempts 1) except on a pooled
// connection the replica closed before answering anything, where net/http
// retries too.
func newHostClient(r *replica) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                          r.hostPort,
		IsTLS:                         r.target.Scheme == "https",
		Dial:                          (&fasthttp.TCPDialer{Concurrency: 0}).Dial,
		MaxConns:                      4096,
		MaxConnWaitTimeout:            5 * time.Second,
		MaxIdleConnDuration:           30 * time.Second,
		ReadBufferSize:                16 << 10,
		WriteBufferSize:               16 << 10,
		MaxIdemponentCallAttempts:     2,
		RetryIfErr:                    retryClosedIdle,
		StreamResponseBody:            true,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
	}
}

// retryClosedIdle retries a request once when a pooled connection turned
// out closed before the replica sent a byte of its answer.
func retryClosedIdle(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	return false, attempts < 2 && errors.Is(err, fasthttp.ErrConnectionClosed)
}

// hopHeaders are connection-level headers a proxy must not forward, plus
// the framing headers the router sets itself (Host, Content-Length).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length"}

func isHopHeader(key []byte) bool {
	for _, h := range hopHeaders {
		if len(key) == len(h) && bytes.EqualFold(key, []byte(h)) {
			return true
		}
	}
	return false
}

// forward sends the request to rep and relays the answer. It returns false
// only when the replica refused the connection (nothing was sent, so the
// caller may try another replica); every other outcome is answered here.
func (rt *Router) forward(ctx *fasthttp.RequestCtx, p *pool, rep *replica, path, body []byte, profile string, start time.Time) bool {
	resp, ok := rt.roundTrip(ctx, p, rep, path, body, profile, start)
	if !ok || resp == nil {
		return ok
	}
	rt.relay(ctx, resp, p, rep, profile)
	return true
}

// roundTrip sends one upstream request with rep counted in flight. On a
// refused connection it marks rep down and returns (nil, false); on any
// other failure it answers 502 and returns (nil, true). A non-nil response
// is the caller's: relay it, or release it with rt.finish.
func (rt *Router) roundTrip(ctx *fasthttp.RequestCtx, p *pool, rep *replica, path, body []byte, profile string, start time.Time) (*fasthttp.Response, bool) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	in := &ctx.Request
	for k, v := range in.Header.All() {
		if !isHopHeader(k) {
			req.Header.AddBytesKV(k, v)
		}
	}
	req.Header.SetMethodBytes(in.Header.Method())
	u := req.URI()
	u.SetScheme(rep.target.Scheme)
	u.SetHost(rep.target.Host)
	if rep.target.Path == "" {
		u.SetPathBytes(path)
	} else {
		u.SetPath(rep.target.Path + string(path))
	}
	u.SetQueryStringBytes(in.URI().QueryString())
	req.SetBodyRaw(body)
	resp := fasthttp.AcquireResponse()
	rep.inflight.Add(1)
	rep.inflightGauge.Inc()
	if profile != "" {
		rt.metrics.observeAdded(profile, time.Since(start))
	}
	if err := rep.client.DoDeadline(req, resp, time.Now().Add(rt.cfg.UpstreamTimeout)); err != nil {
		rt.finish(p, rep, resp)
		if isConnectError(err) {
			rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "connect").Inc()
			rt.markDown(p, rep)
			return nil, false
		}
		rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "transport").Inc()
		writeError(ctx, fasthttp.StatusBadGateway, "replica "+rep.base+" failed: "+err.Error())
		return nil, true
	}
	return resp, true
}

// finish releases an upstream response (closing its stream: an unread one
// drops the connection, so the replica sees the client go) and takes the
// request off rep's in-flight count.
func (rt *Router) finish(p *pool, rep *replica, resp *fasthttp.Response) {
	_ = resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
	rep.inflight.Add(-1)
	rep.inflightGauge.Dec()
}

// relay answers the client with resp: status, headers and body. The body
// is not copied into the router: it is the client response's body stream,
// written as the replica sends it. A body of unknown length (every SSE
// stream) goes out chunked, each read from the replica a chunk flushed at
// once, so tokens are never held back. The response is released, and rep
// leaves the in-flight count, when the body has been written or the
// client went away.
func (rt *Router) relay(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, p *pool, rep *replica, profile string) {
	out := &ctx.Response
	for k, v := range resp.Header.All() {
		if !isHopHeader(k) {
			out.Header.AddBytesKV(k, v)
		}
	}
	out.Header.Set("X-Inference-Router-Replica", rep.base)
	status := resp.StatusCode()
	out.SetStatusCode(status)
	rt.metrics.countRequest(rep, profile, p.name, status)
	if status >= 500 {
		rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "status").Inc()
	}
	stream := resp.BodyStream()
	if stream == nil {
		out.SetBody(resp.Body())
		rt.finish(p, rep, resp)
		return
	}
	size := resp.Header.ContentLength()
	if size < 0 {
		size = -1 // chunked or read-until-close upstream: chunked to the client
	}
	b := bodies.Get().(*upstreamBody)
	*b = upstreamBody{rt: rt, p: p, rep: rep, resp: resp, stream: stream}
	out.SetBodyStream(b, size)
}

// upstreamBody is a replica's response body as the client response's body
// stream; fasthttp closes it when the response is written (or abandoned).
type upstreamBody struct {
	rt     *Router
	p      *pool
	rep    *replica
	resp   *fasthttp.Response
	stream io.Reader
}

var bodies = sync.Pool{New: func() any { return new(upstreamBody) }}

func (b *upstreamBody) Read(buf []byte) (int, error) {
	n, err := b.stream.Read(buf)
	if err != nil && err != io.EOF {
		b.rt.metrics.upstreamErrs.WithLabelValues(b.p.name, b.rep.base, "transport").Inc()
	}
	return n, err
}

func (b *upstreamBody) Close() error {
	if b.resp == nil {
		return nil
	}
	b.rt.finish(b.p, b.rep, b.resp)
	*b = upstreamBody{}
	bodies.Put(b)
	return nil
}

// readUpstreamBody reads a whole (bounded) upstream body, streamed or not.
func readUpstreamBody(resp *fasthttp.Response, limit int64) ([]byte, error) {
	if s := resp.BodyStream(); s != nil {
		return io.ReadAll(io.LimitReader(s, limit))
	}
	return append([]byte(nil), resp.Body()...), nil
}

// isConnectError says whether err means the replica refused or could not
// be reached (so the request never left the router).
func isConnectError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fasthttp.ErrDialTimeout)
}

// errorTypes are the OpenAI error types of the router's own answers.
var errorTypes = map[int]string{400: "BadRequestError", 404: "NotFoundError", 413: "BadRequestError",
	431: "BadRequestError", 502: "InternalServerError", 503: "ServiceUnavailableError"}

// writeError writes an OpenAI-style error body.
func writeError(ctx *fasthttp.RequestCtx, status int, message string) {
	typ := errorTypes[status]
	if typ == "" {
		typ = "InternalServerError"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": status}})
	ctx.Response.Reset()
	ctx.SetContentType("application/json")
	ctx.SetStatusCode(status)
	ctx.SetBody(b)
}

// serverError answers what the server itself refused before the handler
// ran (an oversized body or header block, a malformed request), as an
// OpenAI error like every other answer of the router.
func (rt *Router) serverError(ctx *fasthttp.RequestCtx, err error) {
	var tooBig *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		writeError(ctx, fasthttp.StatusRequestEntityTooLarge, "request body is over the router's limit of "+strconv.FormatInt(rt.cfg.MaxBodyBytes, 10)+" bytes")
	case errors.As(err, &tooBig):
		writeError(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "request headers are over the router's limit of "+strconv.Itoa(maxHeaderBytes)+" bytes")
	default:
		writeError(ctx, fasthttp.StatusBadRequest, "malformed request: "+err.Error())
	}
}
