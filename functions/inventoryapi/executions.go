package inventoryapi

import (
	"errors"
	"net/http"

	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
)

const maxAPIKeyLength = 4096

// ExecutionRequest is the body of POST /api/v1/deployments/executions.
type ExecutionRequest struct {
	ClusterSessionID *string `json:"cluster_session_id"`
	Name             *string `json:"name"`
	Model            *string `json:"model"`
	Endpoint         *string `json:"endpoint"`
	Namespace        *string `json:"namespace"`
	APIKey           *string `json:"api_key"`
}

func (a *API) createExecution(w http.ResponseWriter, r *http.Request) error {
	var req ExecutionRequest
	if err := fn.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	if err := required(map[string]bool{"cluster_session_id": req.ClusterSessionID != nil, "name": req.Name != nil,
		"model": req.Model != nil, "endpoint": req.Endpoint != nil}); err != nil {
		return err
	}
	e := inventory.Execution{ID: inventory.NewID(), ClusterSessionID: *req.ClusterSessionID, Name: *req.Name, Model: *req.Model,
		Endpoint: *req.Endpoint, Ownership: inventory.OwnershipExistingEndpoint, Status: inventory.StatusReady}
	if req.Namespace != nil {
		e.Namespace = *req.Namespace
	}
	apiKey := ""
	if req.APIKey != nil {
		apiKey = *req.APIKey
	}
	if err := firstErr(text("cluster_session_id", e.ClusterSessionID, 200, false), text("name", e.Name, 200, false),
		text("model", e.Model, 256, false), text("namespace", e.Namespace, 63, true), text("api_key", apiKey, maxAPIKeyLength, true),
		inventory.ValidateEndpoint("endpoint", e.Endpoint)); err != nil {
		return err
	}
	session, err := a.repo.ActiveSession(r.Context(), e.ClusterSessionID)
	if err != nil {
		return err
	}
	if e.Namespace == "" {
		e.Namespace = session.Namespace
	}
	// Nothing is saved until the endpoint answers a model list naming the model.
	models, err := inventory.ProbeModel(r.Context(), a.client, e.Endpoint, apiKey, e.Model, a.cfg.ProbeTimeout)
	var probeErr *inventory.ProbeError
	if errors.As(err, &probeErr) {
		a.endpoint.WithLabelValues("failed").Inc()
		return problem.New(problem.CodeBadRequest, "endpoint %s did not check out: %s", e.Endpoint, probeErr.Reason)
	}
	if err != nil {
		return err
	}
	a.endpoint.WithLabelValues("ok").Inc()
	e.Models = models[:min(len(models), 100)]
	if err := a.repo.PutExecution(r.Context(), e, apiKey); err != nil {
		return err
	}
	stored, err := a.repo.Execution(r.Context(), e.ID)
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusCreated, stored)
	return nil
}

func (a *API) listExecutions(w http.ResponseWriter, r *http.Request) error {
	page, err := listPage(r)
	if err != nil {
		return err
	}
	q, err := queryValues(r, "cluster_session_id", "deployment_ownership", "status", "model")
	if err != nil {
		return err
	}
	items, total, err := a.repo.ListExecutions(r.Context(), inventory.ExecutionQuery{ClusterSessionID: q["cluster_session_id"],
		Ownership: q["deployment_ownership"], Status: q["status"], Model: q["model"], Page: page})
	return writeList(w, items, total, err)
}

func (a *API) getExecution(w http.ResponseWriter, r *http.Request) error {
	e, err := a.repo.Execution(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, e)
	return nil
}

func (a *API) deleteExecution(w http.ResponseWriter, r *http.Request) error {
	if err := a.repo.DeleteExecution(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
