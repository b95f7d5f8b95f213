package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/problem"
)

// maxModelListBytes caps the model list an endpoint may answer.
const maxModelListBytes = 1 << 20

// MaxEndpointLength bounds an endpoint URL.
const MaxEndpointLength = 2048

// ValidateEndpoint checks an OpenAI-compatible base URL given in a body's field: http(s), a host,
// no credentials, query or fragment, at most MaxEndpointLength (a 422 problem otherwise).
func ValidateEndpoint(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > MaxEndpointLength {
		return problem.Validation(problem.Field("must be an http(s) URL such as http://127.0.0.1:8000/v1", "url_parsing", "body", field))
	}
	if u.User != nil {
		return problem.Validation(problem.Field("must not carry credentials; pass api_key instead", "url_parsing", "body", field))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return problem.Validation(problem.Field("must be a base URL without query or fragment", "url_parsing", "body", field))
	}
	return nil
}

// ModelsURL is where an OpenAI-compatible base URL lists its models: <base>/models for a /v1
// base, else <base>/v1/models.
func ModelsURL(endpoint string) string {
	base := strings.TrimRight(endpoint, "/")
	if strings.HasSuffix(base, "/v1") {
		return base + "/models"
	}
	return base + "/v1/models"
}

// ProbeError says why an endpoint did not check out, in words fit for a client. It never holds
// the API key, and it says only that the endpoint is not allowed or unreachable: which port is
// closed, what status a host answers or whether it asked for credentials would let the API map a
// network it can reach (as simulation-api's model discovery does).
type ProbeError struct{ Reason string }

func (e *ProbeError) Error() string { return e.Reason }

// ListModels asks an endpoint for its model list within timeout, sending apiKey as a Bearer
// token. Every failure is a *ProbeError.
func ListModels(ctx context.Context, client *http.Client, endpoint, apiKey string, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target := ModelsURL(endpoint)
	unreachable := &ProbeError{fmt.Sprintf(`unreachable: GET %s did not answer an OpenAI model list ({"data": [...]}) %s within %s`, target, keyWords(apiKey != ""), timeout)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, unreachable
	}
	req.Header.Set("Accept", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(req)
	if errors.Is(err, egress.ErrNotAllowed) {
		return nil, &ProbeError{"not allowed by this installation's endpoint policy"}
	}
	if err != nil {
		return nil, unreachable
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, unreachable
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelListBytes+1))
	if err != nil || len(body) > maxModelListBytes {
		return nil, unreachable
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Data == nil {
		return nil, unreachable
	}
	models := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			models = append(models, m.ID)
		}
	}
	return models, nil
}

// ProbeModel checks that the endpoint answers a model list naming model, returning the list.
func ProbeModel(ctx context.Context, client *http.Client, endpoint, apiKey, model string, timeout time.Duration) ([]string, error) {
	models, err := ListModels(ctx, client, endpoint, apiKey, timeout)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(models, model) {
		shown := models[:min(len(models), 20)]
		return models, &ProbeError{fmt.Sprintf("the endpoint does not serve model %q (it serves %s)", model, strings.Join(shown, ", "))}
	}
	return models, nil
}

// keyWords is how a probe's message names the key it sent, or that it sent none.
func keyWords(keyed bool) string {
	if keyed {
		return "with this key"
	}
	return "without a key"
}
