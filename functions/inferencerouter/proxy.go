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

// Headers a Connection header names are this hop's too (RFC 9110 7.6.1),
// so both directions drop them with hopHeaders. The common Connection
// values, keep-alive and close, name none; then the copy checks each
// header against hopHeaders only. The loops over a header's All() stay at
// the call sites: passed to a helper, the iterator would be allocated.

var connectionHeader = []byte("Connection")

func isConnection(key []byte) bool { return bytes.EqualFold(key, connectionHeader) }

// nextToken splits a Connection value's first token (comma-separated,
// whitespace around it trimmed) from the rest.
func nextToken(value []byte) (token, rest []byte) {
	token, rest, _ = bytes.Cut(value, []byte(","))
	return bytes.Trim(token, " \t"), rest
}

// namesHeaders says whether a Connection value lists a token other than
// keep-alive and close, the options that name no header.
func namesHeaders(value []byte) bool {
	for len(value) > 0 {
		var token []byte
		token, value = nextToken(value)
		if len(token) > 0 && !bytes.EqualFold(token, []byte("keep-alive")) && !bytes.EqualFold(token, []byte("close")) {
			return true
		}
	}
	return false
}

// connectionListsHeader says whether one of the Connection values lists key.
func connectionListsHeader(values [][]byte, key []byte) bool {
	for _, v := range values {
		for len(v) > 0 {
			var token []byte
			token, v = nextToken(v)
			if bytes.EqualFold(token, key) {
				return true
			}
		}
	}
	return false
}

// forward sends the request to rep and relays the answer. It returns false
// only when the replica refused the connection (nothing was sent, so the
// caller may try another replica); every other outcome is answered here.
func (rt *Router) forward(ctx *fasthttp.RequestCtx, p *pool, rep *replica, path, body []byte, profile string, start time.Time) bool {
	ans, ok := rt.roundTrip(ctx, p, rep, path, body, profile, start)
	if !ok || ans.resp == nil {
		return ok
	}
	rt.relay(ctx, ans, p, rep, profile)
	return true
}

// upstreamAnswer is a replica's response as roundTrip got it: resp, and release
// when its body is still a stream on the replica's connection.
type upstreamAnswer struct {
	resp    *fasthttp.Response
	release func(done bool)
}

// roundTrip sends one upstream request for path (as the client sent it,
// not decoded) with rep counted in flight. On a refused connection it
// marks rep down and returns (upstreamAnswer{}, false); on any other
// failure it answers (503 for a saturated pool, 504 for a timeout, else
// 502) and returns (upstreamAnswer{}, true). A non-nil
// answer is the caller's: relay it, or release it with rt.finish.
func (rt *Router) roundTrip(ctx *fasthttp.RequestCtx, p *pool, rep *replica, path, body []byte, profile string, start time.Time) (upstreamAnswer, bool) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	in := &ctx.Request
	var listsBuf [4][]byte
	lists := listsBuf[:0] // the Connection values that name headers
	for k, v := range in.Header.All() {
		if isConnection(k) && namesHeaders(v) {
			lists = append(lists, v)
		}
	}
	for k, v := range in.Header.All() {
		if !isHopHeader(k) && (len(lists) == 0 || !connectionListsHeader(lists, k)) {
			req.Header.AddBytesKV(k, v)
		}
	}
	req.Header.SetMethodBytes(in.Header.Method())
	u := req.URI()
	u.DisablePathNormalizing = true // path is sent as the client wrote it, escapes and all
	u.SetScheme(rep.target.Scheme)
	u.SetHost(rep.target.Host)
	if rep.target.Path == "" {
		u.SetPathBytes(path)
	} else {
		u.SetPath(rep.target.Path + string(path))
	}
	u.SetQueryStringBytes(in.URI().QueryString())
	req.SetBodyRaw(body)
	ans := upstreamAnswer{resp: fasthttp.AcquireResponse()}
	rep.inflight.Add(1)
	rep.inflightGauge.Inc()
	if profile != "" {
		rt.metrics.observeAdded(profile, time.Since(start))
	}
	var err error
	if ans.release, err = rep.client.exchange(req, ans.resp, rt.cfg.UpstreamTimeout); err != nil {
		rt.finish(p, rep, ans, false)
		if isConnectError(err) {
			rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "connect").Inc()
			rt.markDown(p, rep)
			return upstreamAnswer{}, false
		}
		if errors.Is(err, fasthttp.ErrNoFreeConns) {
			// every pooled connection stayed busy for --upstream-conn-wait:
			// the replica is saturated, not broken, so the client may retry
			rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "pool").Inc()
			writeReplicaError(ctx, rep, fasthttp.StatusServiceUnavailable, "the replica's "+strconv.Itoa(rt.cfg.UpstreamMaxConns)+
				" connections all stayed busy for "+rt.cfg.UpstreamConnWait.String())
			ctx.Response.Header.Set("Retry-After", "1")
			return upstreamAnswer{}, true
		}
		rt.metrics.upstreamErrs.WithLabelValues(p.name, rep.base, "transport").Inc()
		// fixed messages: the error's own text names the replica's address
		// and may quote what it sent
		switch {
		case isTimeout(err):
			writeReplicaError(ctx, rep, fasthttp.StatusGatewayTimeout, "the replica did not answer within the router's upstream timeout of "+rt.cfg.UpstreamTimeout.String())
		case errors.Is(err, fasthttp.ErrConnectionClosed):
			writeReplicaError(ctx, rep, fasthttp.StatusBadGateway, "the replica closed the connection before answering")
		default:
			writeReplicaError(ctx, rep, fasthttp.StatusBadGateway, "the replica's answer could not be read as HTTP/1.1")
		}
		return upstreamAnswer{}, true
	}
	return ans, true
}

// finish releases an upstream answer (its stream closed and its connection
// back in the pool when done says the body was read to its end, else
// closed, so the replica sees the client go) and takes the request off
// rep's in-flight count.
func (rt *Router) finish(p *pool, rep *replica, ans upstreamAnswer, done bool) {
	_ = ans.resp.CloseBodyStream()
	if ans.release != nil {
		ans.release(done)
	}
	fasthttp.ReleaseResponse(ans.resp)
	rep.inflight.Add(-1)
	rep.inflightGauge.Dec()
}

// relay answers the client with the replica's answer: status, headers and
// body. A body read whole (every small answer of known length) is written
// from memory; a stream is not copied into the router: it becomes the
// client response's body stream, written as the replica sends it. A body of
// unknown length (every SSE stream) goes out chunked, each read from the
// replica a chunk flushed at once, so tokens are never held back. The
// answer is released, and rep leaves the in-flight count, when the body has
// been written or the client went away.
func (rt *Router) relay(ctx *fasthttp.RequestCtx, ans upstreamAnswer, p *pool, rep *replica, profile string) {
	out := &ctx.Response
	resp := ans.resp
	var listsBuf [4][]byte
	lists := listsBuf[:0] // the Connection values that name headers
	for k, v := range resp.Header.All() {
		if isConnection(k) && namesHeaders(v) {
			lists = append(lists, v)
		}
	}
	for k, v := range resp.Header.All() {
		if !isHopHeader(k) && (len(lists) == 0 || !connectionListsHeader(lists, k)) {
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
		rt.finish(p, rep, ans, true)
		return
	}
	size := resp.Header.ContentLength()
	if size < 0 {
		size = -1 // chunked or read-until-close upstream: chunked to the client
	}
	b := bodies.Get().(*upstreamBody)
	*b = upstreamBody{rt: rt, p: p, rep: rep, ans: ans, stream: stream, client: ctx}
	out.SetBodyStream(b, size)
}

// upstreamBody is a replica's response body as the client response's body
// stream; fasthttp closes it when the response is written (or abandoned).
type upstreamBody struct {
	rt     *Router
	p      *pool
	rep    *replica
	ans    upstreamAnswer
	stream io.Reader
	client *fasthttp.RequestCtx // whose connection the body is written to
	done   bool                 // read to its end (the server reads a sized body to its EOF too)
}

var bodies = sync.Pool{New: func() any { return new(upstreamBody) }}

// Read hands the server the next part of the replica's body, and gives its
// write to the client --stream-write-timeout from now. The server writes
// what Read returns before it reads again, so a client that stops reading
// fails the write within the timeout, and the stream is closed (the
// replica's connection with it, rep off the in-flight count) instead of
// holding a replica connection for as long as the replica streams. A
// whole-response deadline (fasthttp's Server.WriteTimeout) would cut long
// SSE streams of clients that do read; this one only bounds each write.
// fasthttp clears the deadline once the response is written.
func (b *upstreamBody) Read(buf []byte) (int, error) {
	n, err := b.stream.Read(buf)
	// an in-memory context has no connection, and a failure to set the
	// deadline shows as the write's own failure
	_ = b.client.SetWriteDeadline(time.Now().Add(b.rt.cfg.StreamWriteTimeout))
	if err == io.EOF {
		b.done = true
	} else if err != nil {
		b.rt.metrics.upstreamErrs.WithLabelValues(b.p.name, b.rep.base, "transport").Inc()
	}
	return n, err
}

func (b *upstreamBody) Close() error {
	if b.ans.resp == nil {
		return nil
	}
	b.rt.finish(b.p, b.rep, b.ans, b.done)
	*b = upstreamBody{}
	bodies.Put(b)
	return nil
}

// readUpstreamBody reads a whole (bounded) upstream body, streamed or not;
// done says it was read to its end.
func readUpstreamBody(resp *fasthttp.Response, limit int64) (body []byte, done bool, err error) {
	s := resp.BodyStream()
	if s == nil {
		return append([]byte(nil), resp.Body()...), true, nil
	}
	body, err = io.ReadAll(io.LimitReader(s, limit))
	if err != nil {
		return nil, false, err
	}
	var probe [1]byte
	n, end := s.Read(probe[:])
	return body, n == 0 && end == io.EOF, nil
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
	408: "BadRequestError", 431: "BadRequestError", 502: "InternalServerError", 503: "ServiceUnavailableError", 504: "InternalServerError"}

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

// writeReplicaError is writeError for a failure of rep: the message names
// no replica (its address is the deployment's, not the client's business)
// and the answer carries X-Inference-Router-Replica, as rep's answers do.
func writeReplicaError(ctx *fasthttp.RequestCtx, rep *replica, status int, message string) {
	writeError(ctx, status, message)
	ctx.Response.Header.Set("X-Inference-Router-Replica", rep.base)
}

// serverError answers what the server itself refused before the handler
// ran (an oversized body or header block, a malformed or too slow
// request), as an OpenAI error like every other answer of the router. The
// message is fixed per kind: fasthttp's error text quotes the request's
// header block, the client's Authorization among it, and none of it may
// go back out (to a client, or to a log a proxy in front might keep).
func (rt *Router) serverError(ctx *fasthttp.RequestCtx, err error) {
	var tooBig *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		writeError(ctx, fasthttp.StatusRequestEntityTooLarge, "request body is over the router's limit of "+strconv.FormatInt(rt.cfg.MaxBodyBytes, 10)+" bytes")
	case errors.As(err, &tooBig):
		writeError(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "request headers are over the router's limit of "+strconv.Itoa(maxHeaderBytes)+" bytes")
	case isTimeout(err):
		writeError(ctx, fasthttp.StatusRequestTimeout, "request was not received within the router's read timeout of "+requestReadTimeout.String())
	default:
		writeError(ctx, fasthttp.StatusBadRequest, "malformed request: its request line, headers or body framing are not valid HTTP/1.1")
	}
}
