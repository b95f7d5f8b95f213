package evaluationapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/problem"
)

// Inventory resolves what a run benchmarks. Errors are problems: 404 for an unknown execution
// or Model Service, 401/403 for a Model Service key that does not check out, 409 for one that
// is not ready.
type Inventory interface {
	// Execution returns a deployment execution as a run target.
	Execution(ctx context.Context, id string) (evalrun.Target, error)
	// ModelService resolves a Model Service to its active member and published name, checking
	// the access key.
	ModelService(ctx context.Context, groupID, accessKey string) (evalrun.Target, error)
}

// StaticExecution is one entry of LENS_STATIC_EXECUTIONS: a deployment execution the operator
// registers in the environment (the local stack registers its simulator this way).
type StaticExecution struct {
	ID               string `json:"id"`
	ClusterSessionID string `json:"cluster_session_id"`
	Name             string `json:"name"`
	Model            string `json:"model"`
	Endpoint         string `json:"endpoint"`
	Namespace        string `json:"namespace"`
}

// staticInventory serves the executions of LENS_STATIC_EXECUTIONS; it has no Model Services.
type staticInventory map[string]evalrun.Target

// parseStaticExecutions reads LENS_STATIC_EXECUTIONS (a JSON array; empty: none).
func parseStaticExecutions(raw string) (staticInventory, error) {
	inv := staticInventory{}
	if raw == "" {
		return inv, nil
	}
	var list []StaticExecution
	if err := problem.DecodeStrict([]byte(raw), &list); err != nil {
		return nil, fmt.Errorf("LENS_STATIC_EXECUTIONS is not a JSON array of {id, cluster_session_id, name, model, endpoint, namespace}: %v", err)
	}
	for i, e := range list {
		u, err := url.Parse(e.Endpoint)
		if e.ID == "" || e.Model == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("LENS_STATIC_EXECUTIONS entry %d needs an id, a model and an http(s) endpoint", i+1)
		}
		inv[e.ID] = evalrun.Target{ExecutionID: e.ID, ClusterSessionID: e.ClusterSessionID, Name: e.Name, Model: e.Model,
			Endpoint: e.Endpoint, Namespace: e.Namespace, Ownership: "existing-endpoint", Status: "ready"}
	}
	return inv, nil
}

func (s staticInventory) Execution(_ context.Context, id string) (evalrun.Target, error) {
	t, ok := s[id]
	if !ok {
		return t, problem.New(problem.CodeNotFound, "deployment execution %s not found", id)
	}
	return t, nil
}

func (s staticInventory) ModelService(_ context.Context, groupID, _ string) (evalrun.Target, error) {
	return evalrun.Target{}, problem.New(problem.CodeNotFound, "model service %s not found", groupID)
}

// MarshalStaticExecutions encodes entries for LENS_STATIC_EXECUTIONS (the local stack, tests).
func MarshalStaticExecutions(list ...StaticExecution) string {
	b, _ := json.Marshal(list)
	return string(b)
}
