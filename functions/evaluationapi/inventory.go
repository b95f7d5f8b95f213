package evaluationapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
)

// Inventory resolves what a run benchmarks. Errors are problems: 404 for an unknown execution
// or Model Service, 401/403 for a Model Service key that does not check out, 409 for one that
// has no healthy member.
type Inventory interface {
	// Execution returns a deployment execution as a run target, with its own API key.
	Execution(ctx context.Context, id string) (evalrun.Target, error)
	// ModelService resolves a Model Service to its active member and published name, checking
	// the access key.
	ModelService(ctx context.Context, groupID, accessKey string) (evalrun.Target, error)
	// AcquireUse and ReleaseUse keep an execution from being deleted while a run uses it.
	AcquireUse(ctx context.Context, executionID, runID string) error
	ReleaseUse(ctx context.Context, executionID, runID string) error
}

// repoInventory resolves through runtime/inventory (the records inventory-api keeps), with the
// operator's LENS_STATIC_EXECUTIONS in front.
type repoInventory struct {
	repo   *inventory.Repo
	static staticInventory
}

func (i repoInventory) Execution(ctx context.Context, id string) (evalrun.Target, error) {
	if t, ok := i.static[id]; ok {
		return t, nil
	}
	e, err := i.repo.Execution(ctx, id)
	if err != nil {
		return evalrun.Target{}, err
	}
	return i.target(ctx, e, e.Model)
}

func (i repoInventory) ModelService(ctx context.Context, groupID, accessKey string) (evalrun.Target, error) {
	e, published, err := i.repo.ResolveModelService(ctx, groupID, accessKey)
	if err != nil {
		return evalrun.Target{}, err
	}
	t, err := i.target(ctx, e, published)
	t.ModelServiceGroupID = groupID
	return t, err
}

func (i repoInventory) target(ctx context.Context, e inventory.Execution, model string) (evalrun.Target, error) {
	key, err := i.repo.ExecutionAPIKey(ctx, e.ID)
	if err != nil {
		return evalrun.Target{}, err
	}
	t := evalrun.Target{ExecutionID: e.ID, ClusterSessionID: e.ClusterSessionID, Name: e.Name, Model: model,
		Endpoint: e.Endpoint, Namespace: e.Namespace, Ownership: e.Ownership, Status: e.Status, ProviderRef: e.ProviderRef, APIKey: key}
	if s, err := i.repo.Session(ctx, e.ClusterSessionID); err == nil {
		t.ClusterID = s.ClusterID
	}
	return t, nil
}

func (i repoInventory) AcquireUse(ctx context.Context, executionID, runID string) error {
	if _, ok := i.static[executionID]; ok {
		return nil
	}
	return i.repo.AcquireUse(ctx, executionID, runID)
}

func (i repoInventory) ReleaseUse(ctx context.Context, executionID, runID string) error {
	if _, ok := i.static[executionID]; ok {
		return nil
	}
	return i.repo.ReleaseUse(ctx, executionID, runID)
}

// StaticExecution is one entry of LENS_STATIC_EXECUTIONS: a deployment execution the operator
// registers in the environment instead of through inventory-api.
type StaticExecution struct {
	ID               string `json:"id"`
	ClusterSessionID string `json:"cluster_session_id"`
	Name             string `json:"name"`
	Model            string `json:"model"`
	Endpoint         string `json:"endpoint"`
	Namespace        string `json:"namespace"`
}

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
	for n, e := range list {
		if e.ID == "" || e.Model == "" || inventory.ValidateEndpoint("endpoint", e.Endpoint) != nil {
			return nil, fmt.Errorf("LENS_STATIC_EXECUTIONS entry %d needs an id, a model and an http(s) endpoint", n+1)
		}
		inv[e.ID] = evalrun.Target{ExecutionID: e.ID, ClusterSessionID: e.ClusterSessionID, Name: e.Name, Model: e.Model,
			Endpoint: e.Endpoint, Namespace: e.Namespace, Ownership: inventory.OwnershipExistingEndpoint, Status: inventory.StatusReady}
	}
	return inv, nil
}

// MarshalStaticExecutions encodes entries for LENS_STATIC_EXECUTIONS (the local stack, tests).
func MarshalStaticExecutions(list ...StaticExecution) string {
	b, _ := json.Marshal(list)
	return string(b)
}
