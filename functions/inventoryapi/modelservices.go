package inventoryapi

import (
	"fmt"
	"net/http"

	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/problem"
)

// ModelServiceRequest is the body of POST /api/v1/model-services.
type ModelServiceRequest struct {
	Name               *string  `json:"name"`
	PublishedName      *string  `json:"published_name"`
	ClusterSessionID   *string  `json:"cluster_session_id"`
	MemberExecutionIDs []string `json:"member_execution_ids"`
}

// CreatedModelService is the 201 answer: the record and its access key, shown only here.
type CreatedModelService struct {
	inventory.ModelService
	AccessKey string `json:"access_key"`
}

func (a *API) createModelService(w http.ResponseWriter, r *http.Request) error {
	var req ModelServiceRequest
	if err := fn.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	if err := required(map[string]bool{"name": req.Name != nil, "published_name": req.PublishedName != nil,
		"cluster_session_id": req.ClusterSessionID != nil, "member_execution_ids": req.MemberExecutionIDs != nil}); err != nil {
		return err
	}
	if err := firstErr(text("name", *req.Name, 200, false), text("published_name", *req.PublishedName, 256, false),
		text("cluster_session_id", *req.ClusterSessionID, 200, false)); err != nil {
		return err
	}
	if n := len(req.MemberExecutionIDs); n < 1 || n > inventory.MaxMembers {
		return problem.Validation(problem.Field(fmt.Sprintf("must list 1-%d execution ids", inventory.MaxMembers), "list_length", "body", "member_execution_ids"))
	}
	for i, id := range req.MemberExecutionIDs {
		if id == "" || len(id) > 200 {
			return problem.Validation(problem.Field("must be 1-200 characters", "string_length", "body", "member_execution_ids", fmt.Sprint(i)))
		}
	}
	g, key, err := a.repo.CreateModelService(r.Context(), inventory.ModelServiceSpec{Name: *req.Name, PublishedName: *req.PublishedName,
		ClusterSessionID: *req.ClusterSessionID, MemberExecutionIDs: req.MemberExecutionIDs})
	if err != nil {
		return err
	}
	// A first probe now, so the answer already shows health and an active member.
	if probed, err := a.prober.ProbeGroup(r.Context(), g); err == nil {
		g = probed
	} else {
		a.deps.Log.Warnw("first probe of a new model service failed; the health loop retries", "model_service", g.ID, "error", err)
	}
	fn.WriteJSON(w, http.StatusCreated, CreatedModelService{ModelService: g, AccessKey: key})
	return nil
}

func (a *API) listModelServices(w http.ResponseWriter, r *http.Request) error {
	page, err := listPage(r)
	if err != nil {
		return err
	}
	q, err := queryValues(r, "cluster_session_id", "published_name", "status")
	if err != nil {
		return err
	}
	items, total, err := a.repo.ListModelServices(r.Context(), inventory.ModelServiceQuery{ClusterSessionID: q["cluster_session_id"],
		PublishedName: q["published_name"], Status: q["status"], Page: page})
	return writeList(w, items, total, err)
}

func (a *API) getModelService(w http.ResponseWriter, r *http.Request) error {
	g, err := a.repo.ModelService(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, g)
	return nil
}

func (a *API) deleteModelService(w http.ResponseWriter, r *http.Request) error {
	if err := a.repo.DeleteModelService(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
