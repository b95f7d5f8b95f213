package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/loadgen/internal/h1"
)

// transport is how a run's requests travel: the lean HTTP/1.1 client (internal/h1) in the
// common case, net/http's client for what the lean one does not do: a caller's Config.Client
// (its own transport, HTTP/2, redirect policy) and a proxy the environment names for the
// endpoint (only without Config.Dial: a proxy would connect past a dial policy).
type transport struct {
	client *http.Client // set when net/http carries the requests

	lean          *h1.Client
	group         *h1.Group // the run's requests over lean, which end together (RunSchedule)
	target        *h1.Target
	authorization string // "Bearer <key>", built once
}

// open picks the run's transport; the returned func releases it when the run ends.
func (t *transport) open(cfg Config, endpoint string) (func(), error) {
	switch {
	case cfg.Client != nil:
		t.client = cfg.Client
		return func() {}, nil
	case cfg.Dial == nil && proxied(endpoint):
		t.client = newHTTPClient(nil)
		// Idle keep-alive connections hold two goroutines each; a client of our own must not
		// keep them after the run.
		return t.client.CloseIdleConnections, nil
	}
	target, err := h1.NewTarget(http.MethodPost, endpoint)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	t.target = target
	t.lean = h1.New(h1.Options{Dial: cfg.Dial, TLS: cfg.TLSConfig, ReadBufferSize: connReadBuffer})
	if cfg.APIKey != "" {
		t.authorization = "Bearer " + cfg.APIKey
	}
	return t.lean.Close, nil
}

// proxied: the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) sends endpoint through a proxy.
func proxied(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false // endpoint() parsed it already
	}
	p, err := http.ProxyFromEnvironment(&http.Request{URL: u})
	return err != nil || p != nil
}

// response is a response's status and headers the engine reads, and its body.
type response struct {
	status      int
	contentType string
	body        io.ReadCloser
	cancel      context.CancelFunc // net/http's: ends the request's context once the body is closed
}

// close ends the response: its body, then net/http's request context.
func (r response) close() {
	r.body.Close()
	if r.cancel != nil {
		r.cancel()
	}
}

// post sends a request's body under its key (X-Request-ID) within deadline (zero: none); an
// error is already in the words a record uses. The lean client takes the deadline as its
// connection's and the run's end through the run's group, with no context per request;
// net/http's needs one.
func (e *engine) post(deadline time.Time, r *Request, key string, body []byte, sent *time.Time) (response, error) {
	accept := "application/json"
	if e.cfg.Stream {
		accept = "text/event-stream"
	}
	if e.lean != nil {
		var headers [5]h1.Header
		h := append(headers[:0], h1.Header{Name: "Content-Type", Value: "application/json"},
			h1.Header{Name: "Accept", Value: accept}, h1.Header{Name: "X-Request-ID", Value: key})
		if e.authorization != "" {
			h = append(h, h1.Header{Name: "Authorization", Value: e.authorization})
		}
		if r.SessionID != "" {
			h = append(h, h1.Header{Name: "X-Session-ID", Value: r.SessionID})
		}
		*sent = time.Now()
		e.progress.sent.Add(1)
		resp, err := e.group.Do(deadline, e.target, h, body)
		if err == nil && isRedirect(resp.StatusCode) {
			resp, err = e.followRedirects(deadline, resp, h, body)
		}
		if err != nil {
			return response{}, recordError(e.contextError(deadline, err))
		}
		return response{status: resp.StatusCode, contentType: resp.ContentType, body: resp.Body}, nil
	}
	ctx, cancel := e.ctx, context.CancelFunc(nil)
	if !deadline.IsZero() {
		ctx, cancel = context.WithDeadline(e.ctx, deadline)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return response{}, recordError("request: " + err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
	req.Header.Set("X-Request-ID", key)
	if r.SessionID != "" {
		req.Header.Set("X-Session-ID", r.SessionID)
	}
	*sent = time.Now()
	e.progress.sent.Add(1)
	resp, err := e.client.Do(req)
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return response{}, recordError(e.contextError(deadline, err))
	}
	// A caller's client may follow a 301-303 as a GET: that answer is not the request's.
	if resp.Request != nil && resp.Request.Method != http.MethodPost && resp.Request.Response != nil {
		resp.Body.Close()
		if cancel != nil {
			cancel()
		}
		return response{}, errMethodChanged(resp.Request.Response.StatusCode, resp.Request.URL)
	}
	return response{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: resp.Body, cancel: cancel}, nil
}

// recordError is an error whose text is a record's Error as it stands.
type recordError string

func (e recordError) Error() string { return string(e) }

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// maxRedirects is net/http's default limit.
const maxRedirects = 10

// errTooManyRedirects is net/http's wording.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

// followRedirects follows resp's redirects the way both transports do (checkRedirect): 307 and
// 308 resend the request; 301, 302 and 303 would turn it into a GET without its body, which is
// no replay of it, so the request fails saying so (errMethodChanged); at most 10; the
// Authorization header only within the first request's origin (scheme, host and port). Each
// hop dials through the same dialer, so an egress policy refuses a destination outside it. A
// redirect without a Location is the response.
func (e *engine) followRedirects(deadline time.Time, resp *h1.Response, headers []h1.Header, body []byte) (*h1.Response, error) {
	current, err := url.Parse(e.url)
	if err != nil {
		return nil, err
	}
	initial := current
	for hops := 0; isRedirect(resp.StatusCode); hops++ {
		if resp.Location == "" {
			return resp, nil
		}
		next, err := current.Parse(resp.Location)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 2<<10)) // lets the connection be reused
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("redirect to %q: %w", resp.Location, err)
		}
		if hops == maxRedirects {
			return nil, errTooManyRedirects
		}
		if resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusPermanentRedirect {
			return nil, errMethodChanged(resp.StatusCode, next)
		}
		if !egress.SameOrigin(initial, next) {
			headers = withoutHeader(headers, "Authorization")
		}
		target, err := h1.NewTarget(http.MethodPost, next.String())
		if err != nil {
			return nil, fmt.Errorf("redirect to %s: %w", next.Redacted(), err)
		}
		if resp, err = e.group.Do(deadline, target, headers, body); err != nil {
			return nil, err
		}
		current = next
	}
	return resp, nil
}

// errMethodChanged fails a request an endpoint redirected with 301, 302 or 303: a client
// follows those with a GET without the body, which is not the request replayed, and an answer
// to it (often a 200 without tokens) must not count as a success.
func errMethodChanged(status int, to *url.URL) error {
	return recordError(fmt.Sprintf("redirect: the endpoint answered %d to %s, which turns the POST into a GET without its body; "+
		"the request is counted as failed (point the endpoint URL at where it redirects)", status, to.Redacted()))
}

// checkRedirect is the net/http client's redirect policy, the lean client's in followRedirects.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errTooManyRedirects
	}
	if req.Method != via[0].Method {
		return errMethodChanged(req.Response.StatusCode, req.URL)
	}
	egress.DropCredentialsAcrossOrigins(req, via)
	return nil
}

func withoutHeader(headers []h1.Header, name string) []h1.Header {
	kept := make([]h1.Header, 0, len(headers))
	for _, h := range headers {
		if !strings.EqualFold(h.Name, name) {
			kept = append(kept, h)
		}
	}
	return kept
}
