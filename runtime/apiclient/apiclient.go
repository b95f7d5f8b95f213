package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Bounds of what a client reads into memory.
const (
	// DefaultMaxBody bounds a JSON answer when Options.MaxBody is 0.
	DefaultMaxBody = 8 << 20
	// MaxErrorBody bounds the problem+json answer read for an *Error.
	MaxErrorBody = 64 << 10
	// maxRedirects is how many same-host redirects a call follows.
	maxRedirects = 5
)

// ErrTooLarge is returned (wrapped) when a JSON answer exceeds the client's bound.
var ErrTooLarge = errors.New("apiclient: answer too large")

// Options configure a Client; the zero value is usable.
type Options struct {
	// Timeout bounds each call as a whole (0: none, for streams; bound them by the context).
	Timeout time.Duration
	// Transport sends the requests (nil: http.DefaultTransport).
	Transport http.RoundTripper
	// MaxBody bounds a JSON answer read by JSON (0: DefaultMaxBody).
	MaxBody int64
	// Observe, when set, is told about every call: its path, its status (0: no answer) and how
	// long the answer's headers took.
	Observe func(path string, status int, elapsed time.Duration)
}

// Client calls one Lensfn API base URL (e.g. http://127.0.0.1:8080).
type Client struct {
	base    *url.URL
	http    *http.Client
	maxBody int64
	observe func(string, int, time.Duration)
}

// New returns a client of base. It follows a redirect only to base's own scheme and host: any
// other redirect answers as it is (a 3xx *Error), so the token is sent nowhere else.
func New(base string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("apiclient: base URL %q is not an http(s) URL", base)
	}
	c := &Client{base: u, maxBody: opts.MaxBody, observe: opts.Observe}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBody
	}
	c.http = &http.Client{Timeout: opts.Timeout, Transport: opts.Transport, CheckRedirect: c.sameHost}
	return c, nil
}

func (c *Client) sameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects || req.URL.Scheme != c.base.Scheme || req.URL.Host != c.base.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// Base is the base URL the client calls.
func (c *Client) Base() string { return c.base.String() }

// URL is the address of path (with query q) under the base.
func (c *Client) URL(path string, q url.Values) string {
	u := c.base.String() + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// Send makes one call and returns the answer whatever its status; the caller closes the body.
// body, when not nil, is sent as JSON; token, when not empty, as a bearer token. A transport
// failure is an error naming the method and URL, never the token.
func (c *Client) Send(ctx context.Context, token, method, path string, q url.Values, body any, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	target := c.URL(path, q)
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	started := time.Now()
	resp, err := c.http.Do(req)
	if c.observe != nil {
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		c.observe(path, status, time.Since(started))
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, redact(err, token))
	}
	return resp, nil
}

// Do is Send for a 2xx answer: any other answer is read (bounded), closed and returned as an
// *Error.
func (c *Client) Do(ctx context.Context, token, method, path string, q url.Values, body any, header http.Header) (*http.Response, error) {
	resp, err := c.Send(ctx, token, method, path, q, body, header)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, ErrorOf(resp)
}

// JSON makes a call and decodes a 2xx JSON answer into out (nil: the answer is discarded). An
// answer over the client's bound is ErrTooLarge; a non-2xx answer is an *Error.
func (c *Client) JSON(ctx context.Context, token, method, path string, q url.Values, body, out any) error {
	resp, err := c.Do(ctx, token, method, path, q, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return fmt.Errorf("%s %s: answer cut short: %w", method, path, err)
	}
	if int64(len(raw)) > c.maxBody {
		return fmt.Errorf("%s %s: %w (more than %d bytes)", method, path, ErrTooLarge, c.maxBody)
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

// redact keeps the token out of an error a transport returned (it never should hold it, but an
// error is printed and logged).
func redact(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}

// Redact replaces token in s (for messages built outside the client).
func Redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[token]")
}
