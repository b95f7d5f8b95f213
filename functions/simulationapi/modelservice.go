package simulationapi

import "context"

// serviceTarget is where a task naming a Model Service sends its requests.
type serviceTarget struct {
	executionID, endpoint, model, namespace string
	apiKey                                  string // the member execution's own key, not the access key
}

// resolveModelService checks the group's access key and resolves it to its active member and
// published name (401/403/404/409 problems from the inventory). The access key only authorises
// the task: the requests carry the member's own key, so the access key never leaves Lensfn.
func (a *API) resolveModelService(ctx context.Context, groupID, accessKey string) (serviceTarget, error) {
	e, published, err := a.inventory.ResolveModelService(ctx, groupID, accessKey)
	if err != nil {
		return serviceTarget{}, err
	}
	key, err := a.inventory.ExecutionAPIKey(ctx, e.ID)
	if err != nil {
		return serviceTarget{}, err
	}
	return serviceTarget{executionID: e.ID, endpoint: e.Endpoint, model: published, namespace: e.Namespace, apiKey: key}, nil
}

// bindModelService points a create request at the Model Service it names, as the spec says:
// endpoint_mode becomes "deployment" and the given endpoint_url, model_name and
// endpoint_deployment_execution_id (placeholders are fine) are replaced by the active member's.
func (a *API) bindModelService(ctx context.Context, req *CreateTaskRequest) error {
	target, err := a.resolveModelService(ctx, *req.ModelServiceGroupID, str(req.APIKey))
	if err != nil {
		return err
	}
	mode := endpointModeDeployment
	req.EndpointMode, req.EndpointURL, req.ModelName = &mode, &target.endpoint, &target.model
	req.EndpointDeploymentExecutionID, req.APIKey = &target.executionID, &target.apiKey
	if target.namespace != "" {
		req.EndpointNamespace = &target.namespace
	}
	return nil
}
