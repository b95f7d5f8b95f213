package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lensfn/lensfn/runtime/apiclient"
)

// maxAPIBody bounds a JSON answer the console reads from an API into memory; artifacts and
// event streams are streamed, not read.
const maxAPIBody = 8 << 20

// apiClient calls the APIs through the ingress (runtime/apiclient). It follows a redirect only
// on LENS_API_URL's own host, so the user's token is only ever sent there.
type apiClient struct {
	client   *apiclient.Client // JSON calls, with a timeout
	stream   *apiclient.Client // event streams and artifacts, bounded by the request's context
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newAPIClient(base string, reg prometheus.Registerer) (*apiClient, error) {
	a := &apiClient{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lens_console_api_calls_total",
			Help: "Calls the console made to the APIs, by API family and status code (0: no answer)."}, []string{"api", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lens_console_api_call_duration_seconds",
			Help:    "Latency of the console's calls to the APIs until the response headers, by API family.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"api"})}
	observe := func(path string, status int, elapsed time.Duration) {
		a.duration.WithLabelValues(family(path)).Observe(elapsed.Seconds())
		a.calls.WithLabelValues(family(path), strconv.Itoa(status)).Inc()
	}
	var err error
	if a.client, err = apiclient.New(base, apiclient.Options{Timeout: 60 * time.Second, MaxBody: maxAPIBody, Observe: observe}); err != nil {
		return nil, err
	}
	if a.stream, err = apiclient.New(base, apiclient.Options{Observe: observe}); err != nil {
		return nil, err
	}
	reg.MustRegister(a.calls, a.duration)
	return a, nil
}

// apiError is an API's problem+json answer (or a failure to get one).
type apiError = apiclient.Error

// family labels a path for the metrics without its ids.
func family(path string) string {
	for _, p := range []string{"/api/simulation", "/api/v1/evaluate", "/api/v1/model-services", "/api/v1/deployments", "/api/v1/configurations", "/api/cluster"} {
		if strings.HasPrefix(path, p) {
			return p
		}
	}
	return "other"
}

// send makes one call whatever the answer's status; body, when not nil, goes as JSON.
func (a *apiClient) send(ctx context.Context, c *apiclient.Client, token, method, path string, body any, header http.Header) (*http.Response, error) {
	resp, err := c.Send(ctx, token, method, path, nil, body, header)
	if err != nil {
		// The error names the URL, never a header: the token stays out of it.
		return nil, &apiError{Status: http.StatusBadGateway, Title: "API unreachable", Detail: err.Error()}
	}
	return resp, nil
}

// call makes a JSON call and decodes a 2xx answer into out (nil: discard); any other answer
// is an *apiError from its problem+json, and an unusable answer a 502 *apiError.
func (a *apiClient) call(ctx context.Context, token, method, path string, body, out any) error {
	err := a.client.JSON(ctx, token, method, path, nil, body, out)
	if err == nil {
		return nil
	}
	if _, ok := apiclient.As(err); ok {
		return err
	}
	return &apiError{Status: http.StatusBadGateway, Title: "API answer unusable", Detail: err.Error()}
}

// problemOf reads a problem+json body; validation details are a list of field errors.
func problemOf(status int, raw []byte) *apiError { return apiclient.Problem(status, raw) }

// asAPIError unwraps an *apiError.
func asAPIError(err error) (*apiError, bool) { return apiclient.As(err) }
