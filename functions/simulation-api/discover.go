package simulationapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
)

const (
	discoverTimeout   = 10 * time.Second
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

// DiscoverModels probes an endpoint's model list (inventory.ListModels: the same probe registers
// deployment executions). The key is sent as a Bearer token and appears in no error message.
func DiscoverModels(ctx context.Context, client *http.Client, endpoint, apiKey string) ([]string, error) {
	models, err := inventory.ListModels(ctx, client, endpoint, apiKey, discoverTimeout)
	return models, probeProblem(err)
}

// probeProblem makes an endpoint that did not check out a 400.
func probeProblem(err error) error {
	var probeErr *inventory.ProbeError
	if errors.As(err, &probeErr) {
		return problem.New(problem.CodeBadRequest, "%s", probeErr.Reason)
	}
	return err
}
