package simulationapi

import (
	"context"
	"slices"

	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
)

// endpointModeDeployment is the endpoint_mode of a task that targets a deployment execution of
// the inventory (directly, or through a Model Service) rather than a user's URL.
const endpointModeDeployment = "deployment"

// boundToExecution reports whether the request names its target by a deployment execution:
// endpoint_mode "deployment" without a Model Service (which resolves its own member).
func (req *CreateTaskRequest) boundToExecution() bool {
	return str(req.EndpointMode) == endpointModeDeployment && req.ModelServiceGroupID == nil
}

// executionTarget resolves a deployment execution to where a task sends its requests: the
// endpoint the deployer recorded (the local provider's router, or its first replica without
// one; the Knative Service's URL) and the execution's own key, or the caller's when the
// execution has none. Problems: 404 for an unknown execution, 409 for one that is not ready.
func (a *API) executionTarget(ctx context.Context, executionID, callerKey string) (inventory.Execution, string, error) {
	e, err := a.inventory.Execution(ctx, executionID)
	if err != nil {
		return inventory.Execution{}, "", err
	}
	if e.Status != inventory.StatusReady {
		return inventory.Execution{}, "", problem.New(problem.CodeConflict, "deployment execution %q is %s, not ready", executionID, e.Status)
	}
	key := callerKey
	if e.HasAPIKey {
		if key, err = a.inventory.ExecutionAPIKey(ctx, e.ID); err != nil {
			return inventory.Execution{}, "", err
		}
	}
	return e, key, nil
}

// bindExecution points an endpoint_mode "deployment" request at the execution it names:
// endpoint_url becomes the execution's endpoint (a given one is ignored, as the spec's
// placeholders are), model_name defaults to the execution's model and must be one it serves
// (422 otherwise), cluster_session_id must be the execution's session (404 unknown, 422
// another), and namespace and deployment name default to the execution's.
func (a *API) bindExecution(ctx context.Context, req *CreateTaskRequest) error {
	e, key, err := a.executionTarget(ctx, *req.EndpointDeploymentExecutionID, str(req.APIKey))
	if err != nil {
		return err
	}
	if req.ClusterSessionID != nil && *req.ClusterSessionID != e.ClusterSessionID {
		if _, err := a.inventory.Session(ctx, *req.ClusterSessionID); err != nil {
			return err
		}
		return problem.Validation(field("is not the cluster session of deployment execution "+e.ID+" ("+e.ClusterSessionID+")",
			"value_error", "cluster_session_id"))
	}
	model := e.Model
	if req.ModelName != nil && *req.ModelName != "" && *req.ModelName != e.Model {
		if !slices.Contains(e.Models, *req.ModelName) {
			return problem.Validation(field("deployment execution "+e.ID+" serves "+e.Model+", not "+*req.ModelName,
				"value_error", "model_name"))
		}
		model = *req.ModelName
	}
	req.EndpointURL, req.ModelName, req.APIKey = &e.Endpoint, &model, &key
	if req.EndpointNamespace == nil && e.Namespace != "" {
		req.EndpointNamespace = &e.Namespace
	}
	if req.EndpointDeploymentName == nil {
		req.EndpointDeploymentName = &e.Name
	}
	return nil
}
