package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxAPIBody bounds a JSON answer the console reads from an API into memory; artifacts and
// event streams are streamed, not read.
const maxAPIBody = 8 << 20

// apiClient calls the APIs through the ingress. It follows no redirect, so the user's token is
// only ever sent to LENS_API_URL.
type apiClient struct {
	base     string
	client   *http.Client // JSON calls, with a timeout
	stream   *http.Client // event streams and artifacts, bounded by the request's context
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newAPIClient(base string, reg prometheus.Registerer) *apiClient {
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	a := &apiClient{base: base,
		client: &http.Client{Timeout: 60 * time.Second, CheckRedirect: noRedirect},
		stream: &http.Client{CheckRedirect: noRedirect},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_console_api_calls_total",
			Help: "Calls the console made to the APIs, by API family and status code (0: no answer)."}, []string{"api", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lens_console_api_call_duration_seconds",
			Help:    "Latency of the console's calls to the APIs until the response headers, by API family.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"api"})}
	reg.MustRegister(a.calls, a.duration)
	return a
}

// apiError is an API's problem+json answer (or a failure to get one).
type apiError struct {
	Status int
	Title  string
	Detail string
	Code   string
	Fields []fieldError
}

type fieldError struct {
	Location []any  `json:"loc"`
	Message  string `json:"msg"`
}

// Field names the request field a validation error is about ("body.endpoint_url" -> "endpoint_url").
func (f fieldError) Field() string {
	var parts []string
	for _, p := range f.Location {
		s := fmt.Sprint(p)
		if len(parts) == 0 && (s == "body" || s == "query" || s == "path") {
			continue
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ".")
}

func (e *apiError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Title, e.Detail)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Title)
}

// NotFound says the API answered 404: an unknown record, or a route this deployment lacks.
func (e *apiError) NotFound() bool { return e.Status == http.StatusNotFound }

// family labels a path for the metrics without its ids.
func family(path string) string {
	for _, p := range []string{"/api/simulation", "/api/v1/evaluate", "/api/v1/model-services", "/api/v1/deployments", "/api/v1/configurations", "/api/cluster"} {
		if strings.HasPrefix(path, p) {
			return p
		}
	}
	return "other"
}

// send makes one call; body, when not nil, goes as JSON.
func (a *apiClient) send(ctx context.Context, c *http.Client, token, method, path string, body any, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	started := time.Now()
	resp, err := c.Do(req)
	a.duration.WithLabelValues(family(path)).Observe(time.Since(started).Seconds())
	code := "0"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	a.calls.WithLabelValues(family(path), code).Inc()
	if err != nil {
		// The error names the URL, never a header: the token stays out of it.
		return nil, &apiError{Status: http.StatusBadGateway, Title: "API unreachable", Detail: err.Error()}
	}
	return resp, nil
}

// call makes a JSON call and decodes a 2xx answer into out (nil: discard); any other answer
// is an *apiError from its problem+json.
func (a *apiClient) call(ctx context.Context, token, method, path string, body, out any) error {
	resp, err := a.send(ctx, a.client, token, method, path, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody+1))
	if err != nil {
		return &apiError{Status: http.StatusBadGateway, Title: "API answer cut short", Detail: err.Error()}
	}
	if len(raw) > maxAPIBody {
		return &apiError{Status: http.StatusBadGateway, Title: "API answer too large", Detail: fmt.Sprintf("more than %d bytes", maxAPIBody)}
	}
	if resp.StatusCode/100 != 2 {
		return problemOf(resp.StatusCode, raw)
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &apiError{Status: http.StatusBadGateway, Title: "API answer is not JSON", Detail: err.Error()}
	}
	return nil
}

// problemOf reads a problem+json body; validation details are a list of field errors.
func problemOf(status int, raw []byte) *apiError {
	var p struct {
		Title  string          `json:"title"`
		Detail json.RawMessage `json:"detail"`
		Code   string          `json:"code"`
	}
	e := &apiError{Status: status, Title: http.StatusText(status)}
	if json.Unmarshal(raw, &p) != nil {
		return e
	}
	if p.Title != "" {
		e.Title = p.Title
	}
	e.Code = p.Code
	var text string
	if json.Unmarshal(p.Detail, &text) == nil {
		e.Detail = text
	} else if json.Unmarshal(p.Detail, &e.Fields) == nil {
		var parts []string
		for _, f := range e.Fields {
			parts = append(parts, f.Field()+": "+f.Message)
		}
		e.Detail = strings.Join(parts, "; ")
	}
	return e
}

// asAPIError unwraps an *apiError.
func asAPIError(err error) (*apiError, bool) {
	var e *apiError
	ok := errors.As(err, &e)
	return e, ok
}
