package lensctl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/lensfn/lensfn/runtime/apiclient"
)

// Client calls one Lensfn API with a bearer token (runtime/apiclient).
type Client struct {
	api   *apiclient.Client
	token string
}

// maxResponseBytes bounds a JSON answer the client decodes.
const maxResponseBytes = 64 << 20

// APIError is a problem+json answer (or any non-2xx).
type APIError = apiclient.Error

// do sends a request and returns the response when it is 2xx; the caller closes the body.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body any, header http.Header) (*http.Response, error) {
	return c.api.Do(ctx, c.token, method, path, q, body, header)
}

// JSON sends a request and decodes a JSON answer into out (when out is not nil).
func (c *Client) JSON(ctx context.Context, method, path string, q url.Values, body, out any) error {
	return c.api.JSON(ctx, c.token, method, path, q, body, out)
}

// redact keeps the token out of an error before it is printed.
func redact(err error, token string) error {
	if token == "" {
		return err
	}
	if s := apiclient.Redact(err.Error(), token); s != err.Error() {
		return fmt.Errorf("%s", s)
	}
	return err
}

func newClient(base, token string) (*Client, error) {
	// No overall timeout: watches and downloads run as long as the task; dialing is bounded.
	api, err := apiclient.New(base, apiclient.Options{MaxBody: maxResponseBytes, Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: 10 * time.Minute, TLSHandshakeTimeout: 10 * time.Second}})
	if err != nil {
		return nil, err
	}
	return &Client{api: api, token: token}, nil
}
