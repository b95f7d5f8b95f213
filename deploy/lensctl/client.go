package lensctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one Lensfn API with a bearer token.
type Client struct {
	Base  string // e.g. http://127.0.0.1:8080
	token string
	http  *http.Client
}

// maxResponseBytes bounds a JSON answer the client decodes.
const maxResponseBytes = 64 << 20

// APIError is a problem+json answer (or any non-2xx).
type APIError struct {
	Status int
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
	RequestID string `json:"requestId"`
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Status, e.Title)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	for _, f := range e.Errors {
		fmt.Fprintf(&b, "\n  %s: %s", f.Field, f.Message)
	}
	if e.RequestID != "" {
		b.WriteString("\n  (request id " + e.RequestID + ")")
	}
	return b.String()
}

func (c *Client) url(path string, q url.Values) string {
	u := strings.TrimRight(c.Base, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// do sends a request and returns the response when it is 2xx; the caller closes the body.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body any, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, c.url(path, q), redact(err, c.token))
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	apiErr := &APIError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(raw, apiErr) != nil && len(raw) > 0 {
		apiErr.Detail = strings.TrimSpace(string(raw))
	}
	apiErr.Status = resp.StatusCode
	return nil, apiErr
}

// JSON sends a request and decodes a JSON answer into out (when out is not nil).
func (c *Client) JSON(ctx context.Context, method, path string, q url.Values, body, out any) error {
	resp, err := c.do(ctx, method, path, q, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(out)
}

// redact keeps the token out of an error a transport returned (it never should hold it, but an
// error is printed).
func redact(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), token, "[token]"))
}

func newClient(base, token string) *Client {
	// No overall timeout: watches and downloads run as long as the task; dialing is bounded.
	return &Client{Base: base, token: token, http: &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: 10 * time.Minute, TLSHandshakeTimeout: 10 * time.Second}}}
}
