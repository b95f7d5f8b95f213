package inventoryapi

import (
	"errors"
	"net/http"

	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/kubeconfig"
	"github.com/lensfn/lensfn/runtime/problem"
)

// maxKubeconfigBytes bounds a kubeconfig (they are a few KiB; certificates inline stay well under).
const maxKubeconfigBytes = 256 << 10

// ClusterRequest is the body of POST /api/cluster/clusters.
type ClusterRequest struct {
	Name       *string `json:"name"`
	Kind       *string `json:"kind"`
	Kubeconfig *string `json:"kubeconfig"`
	Namespace  *string `json:"namespace"`
}

func (a *API) createCluster(w http.ResponseWriter, r *http.Request) error {
	var req ClusterRequest
	if err := fn.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	if err := required(map[string]bool{"name": req.Name != nil, "kind": req.Kind != nil}); err != nil {
		return err
	}
	spec := inventory.ClusterSpec{Name: *req.Name, Kind: *req.Kind}
	if req.Kubeconfig != nil {
		spec.Kubeconfig = *req.Kubeconfig
	}
	if req.Namespace != nil {
		spec.Namespace = *req.Namespace
	}
	if spec.Kind != inventory.ClusterLocal && spec.Kind != inventory.ClusterKubernetes {
		return problem.Validation(problem.Field("must be local or kubernetes", "enum", "body", "kind"))
	}
	if err := firstErr(text("name", spec.Name, 200, false), text("namespace", spec.Namespace, 63, true),
		text("kubeconfig", spec.Kubeconfig, maxKubeconfigBytes, true)); err != nil {
		return err
	}
	if spec.Kind == inventory.ClusterKubernetes && spec.Kubeconfig != "" {
		// The deployer builds its client from this kubeconfig: only inline credentials, so it
		// cannot be made to run a command or send its own files (runtime/kubeconfig).
		if _, err := kubeconfig.Parse([]byte(spec.Kubeconfig)); err != nil {
			var refusal *kubeconfig.Refusal
			if !errors.As(err, &refusal) {
				return err
			}
			loc := []string{"body", "kubeconfig"}
			if refusal.Field != "" {
				loc = append(loc, refusal.Field)
			}
			return problem.Validation(problem.Field(refusal.Error(), "kubeconfig_refused", loc...))
		}
	}
	c, _, err := a.repo.CreateCluster(r.Context(), spec)
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusCreated, c)
	return nil
}

func (a *API) listClusters(w http.ResponseWriter, r *http.Request) error {
	page, err := listPage(r)
	if err != nil {
		return err
	}
	name, err := queryValue(r, "name")
	if err != nil {
		return err
	}
	if name != "" { // names are unique: at most one match
		c, err := a.repo.ClusterByName(r.Context(), name)
		if problem.CodeOf(err) == problem.CodeNotFound {
			return writeList(w, []inventory.Cluster{}, 0, nil)
		}
		return writeList(w, []inventory.Cluster{c}, 1, err)
	}
	items, total, err := a.repo.ListClusters(r.Context(), page)
	return writeList(w, items, total, err)
}

func (a *API) getCluster(w http.ResponseWriter, r *http.Request) error {
	c, err := a.repo.Cluster(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, c)
	return nil
}

func (a *API) openSession(w http.ResponseWriter, r *http.Request) error {
	if err := fn.DecodeJSON(r, &struct{}{}, true); err != nil {
		return err
	}
	s, err := a.repo.OpenSession(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusCreated, s)
	return nil
}

func (a *API) getSession(w http.ResponseWriter, r *http.Request) error {
	s, err := a.repo.Session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	fn.WriteJSON(w, http.StatusOK, s)
	return nil
}
