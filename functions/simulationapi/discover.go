package simulationapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/problem"
)

const (
	discoverTimeout   = 10 * time.Second
	discoverMaxBytes  = 1 << 20
	maxAPIKeyLength   = 4096
	maxEndpointLength = 2048
)

// DiscoverRequest is the body of POST /models/discover.
type DiscoverRequest struct {
	EndpointURL *string `json:"endpoint_url"`
	APIKey      *string `json:"api_key"`
}

// DiscoverResponse lists the models an endpoint serves.
type DiscoverResponse struct {
	Endpoint string   `json:"endpoint"`
	Models   []string `json:"models"`
}

// validateEndpoint checks an OpenAI-compatible base URL (422 when it is not one).
func validateEndpoint(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > maxEndpointLength {
		return nil, problem.Validation(problem.Field("must be an http(s) URL such as http://127.0.0.1:8000/v1", "url_parsing", "body", field))
	}
	if u.User != nil {
		return nil, problem.Validation(problem.Field("must not carry credentials; pass api_key instead", "url_parsing", "body", field))
	}
	return u, nil
}

// modelsURL is where an endpoint lists its models: <base>/models for a /v1 base, else
// <base>/v1/models.
func modelsURL(endpoint string) string {
	base := strings.TrimRight(endpoint, "/")
	if strings.HasSuffix(base, "/v1") {
		return base + "/models"
	}
	return base + "/v1/models"
}

// DiscoverModels probes an endpoint's model list through the operator's endpoint policy. The
// key is sent as a Bearer token and appears in no error message. Failures say only that the
// endpoint is not allowed or unreachable: which port is closed, what status a host answers or
// whether it asked for credentials would let the API map a network it can reach.
func DiscoverModels(ctx context.Context, policy *egress.Policy, endpoint, apiKey string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	if err := policy.Check(ctx, modelsURL(endpoint)); err != nil {
		return nil, endpointError(endpoint, apiKey != "", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, modelsURL(endpoint), nil)
	if err != nil {
		return nil, problem.New(problem.CodeBadRequest, "endpoint URL is not usable")
	}
	req.Header.Set("Accept", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := policy.Client(0).Do(req)
	if err != nil {
		return nil, endpointError(endpoint, apiKey != "", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, endpointError(endpoint, apiKey != "", egress.ErrUnreachable)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, discoverMaxBytes+1))
	if err != nil || len(body) > discoverMaxBytes {
		return nil, endpointError(endpoint, apiKey != "", egress.ErrUnreachable)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Data == nil {
		return nil, endpointError(endpoint, apiKey != "", egress.ErrUnreachable)
	}
	models := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID == "" {
			return nil, problem.New(problem.CodeBadRequest, "the model list has an entry without an id")
		}
		models = append(models, m.ID)
	}
	return models, nil
}

// endpointError is the whole of what a failed probe tells the caller.
// keyed tells whether a key was sent, so the message says "with this key" or "without a key".
func endpointError(endpoint string, keyed bool, err error) error {
	if errors.Is(egress.Reason(err), egress.ErrNotAllowed) {
		return problem.New(problem.CodeBadRequest, "endpoint %s is not allowed by this installation's endpoint policy", endpoint)
	}
	return problem.New(problem.CodeBadRequest,
		"endpoint %s is unreachable: GET %s did not answer an OpenAI model list ({\"data\": [...]}) %s within %s",
		endpoint, modelsURL(endpoint), keyWords(keyed), discoverTimeout)
}

// keyWords is how a probe's message names the key it sent, or that it sent none.
func keyWords(keyed bool) string {
	if keyed {
		return "with this key"
	}
	return "without a key"
}
