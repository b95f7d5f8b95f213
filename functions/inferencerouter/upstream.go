package inferencerouter

import (
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"
)

// upstream is what the router needs of a replica's HTTP client: one
// exchange within a whole-request timeout (a hostUpstream; the in-memory
// benchmark substitutes a canned one). resp's body is either read whole
// (release is nil: the connection is already back in its pool) or left on
// the connection as resp's body stream; then release hands the connection
// back, or closes it unless done says the body was read to its end.
type upstream interface {
	exchange(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) (release func(done bool), err error)
}

// maxBufferedAnswer is the largest answer of known length read whole
// before it is relayed; a larger one (an embeddings batch, say) is
// streamed through like SSE, so no request holds more than this of the
// router's memory for its answer.
const maxBufferedAnswer = 64 << 10

// maxInterimAnswers bounds the 1xx answers read before the real one.
const maxInterimAnswers = 8

// hostUpstream is a replica's pooled HTTP/1.1 connections (a
// fasthttp.HostClient used for its pool, dialer and buffers only) and the
// exchange on them. fasthttp's own HostClient.Do decides for the client as
// a whole whether bodies are streamed; streaming every answer cost the
// router a set of closures and two reader layers per request for answers
// that are a few hundred bytes (BENCHMARKS.md, "Inference router"), so
// the exchange decides per answer, on its header: a small Content-Length
// answer (every non-stream completion) is read whole into the response and
// the connection goes back at once; SSE and anything chunked, unsized or
// large stays a stream.
type hostUpstream struct{ hc *fasthttp.HostClient }

// newHostClient is the connection pool of one replica. Replicas are
// loopback or in-cluster peers, so the client is lean: no User-Agent of its
// own, header names and paths passed through as the client sent them.
func newHostClient(r *replica, maxConns int, connWait time.Duration) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                          r.hostPort,
		IsTLS:                         r.target.Scheme == "https",
		Dial:                          (&fasthttp.TCPDialer{Concurrency: 0}).Dial,
		MaxConns:                      maxConns,
		MaxConnWaitTimeout:            connWait,
		MaxIdleConnDuration:           30 * time.Second,
		ReadBufferSize:                16 << 10,
		WriteBufferSize:               16 << 10,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
	}
}

// exchange sends req and reads the answer's header, and its body when
// small (see upstream). A pooled connection the replica had closed (the
// write fails, or the connection ends before the answer's first byte) is
// retried once on another: nothing was answered, and net/http retries there
// too. A request is never replayed otherwise.
func (u hostUpstream) exchange(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) (func(bool), error) {
	deadline := time.Now().Add(timeout)
	release, retry, err := u.exchangeOnce(req, resp, deadline)
	if retry {
		release, _, err = u.exchangeOnce(req, resp, deadline)
	}
	return release, err
}

func (u hostUpstream) exchangeOnce(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (release func(bool), retry bool, err error) {
	hc := u.hc
	cc, err := hc.AcquireConn(time.Until(deadline), false)
	if err != nil {
		return nil, false, err // a dial error among them: the caller tells a refused connection
	}
	reused := !cc.LastUseTime().IsZero() // zero until the pool has had it back once
	conn := cc.Conn()
	if err := conn.SetDeadline(deadline); err != nil {
		hc.CloseConn(cc)
		return nil, false, err
	}
	bw := hc.AcquireWriter(conn)
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		hc.CloseConn(cc)
		return nil, reused && !isTimeout(err), err
	}
	br := hc.AcquireReader(conn)
	resp.Reset()
	resp.Header.DisableNormalizing()
	resp.SkipBody = req.Header.IsHead()
	for n := 0; ; n++ {
		if err = resp.Header.Read(br); err != nil {
			hc.ReleaseReader(br)
			hc.CloseConn(cc)
			if errors.Is(err, io.EOF) { // fasthttp's word for any failure before the first byte
				return nil, reused && n == 0, fasthttp.ErrConnectionClosed
			}
			return nil, false, err
		}
		if s := resp.StatusCode(); s >= 200 || s < 100 || s == fasthttp.StatusSwitchingProtocols {
			break
		}
		if n == maxInterimAnswers {
			hc.ReleaseReader(br)
			hc.CloseConn(cc)
			return nil, false, errors.New("too many interim (1xx) answers")
		}
	}
	size := resp.Header.ContentLength()
	status := resp.StatusCode()
	skipBody := resp.SkipBody || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified
	resp.StreamBody = !skipBody && (size < 0 || size > maxBufferedAnswer)
	if !skipBody {
		if err = resp.ReadBody(br, maxBufferedAnswer); err != nil {
			hc.ReleaseReader(br)
			hc.CloseConn(cc)
			return nil, false, err
		}
	}
	// an unsized body (-2) ends when the replica closes: the connection goes with it
	reuse := !req.ConnectionClose() && (skipBody || size != -2)
	if !resp.StreamBody {
		hc.ReleaseReader(br)
		if reuse && !resp.ConnectionClose() {
			hc.ReleaseConn(cc)
		} else {
			hc.CloseConn(cc)
		}
		return nil, false, nil
	}
	// the stream reads from br until the caller closes it (before calling release)
	return func(done bool) {
		hc.ReleaseReader(br)
		if done && reuse && !resp.ConnectionClose() {
			hc.ReleaseConn(cc)
		} else {
			hc.CloseConn(cc) // an abandoned stream: the replica sees the client go
		}
	}, false, nil
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
