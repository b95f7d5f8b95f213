package evaluationapi

import (
	"context"
	"errors"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// Ownership between backends sharing one state store (spec: "Cancel, retry, and delete
// requests targeting work owned by another backend return HTTP 409 before changing records or
// cluster resources"). A backend is LENS_BACKEND_ID: the API and stage instances of one backend
// are interchangeable (NOTES.md: any API instance accepts a request and the lease holder carries
// it out), so ownership is checked between backends, not instances. The owner of a record is the
// backend that created it (owner_backend_id) and, while a stage works on it, the backend of the
// lease holder (a lease's owner is "<backend>/<instance>"). Without LENS_BACKEND_ID everything
// belongs to the one unnamed backend and no request is refused on this ground.

// checkOwner answers 409 when the record (what, id) belongs to another backend: it was created
// there, or a lease of leases is held by an instance of another backend.
func (a *API) checkOwner(ctx context.Context, what, id, createdBy string, leases ...string) error {
	mine := a.deps.Config.BackendID
	if createdBy != "" && createdBy != mine { // a record without one predates backend ids
		return problem.New(problem.CodeConflict, "%s %s is owned by backend %q, not this backend (%q); send the request to the backend that owns it",
			what, id, createdBy, mine)
	}
	for _, name := range leases {
		holder, err := a.deps.Store.LeaseHolder(ctx, name)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if b := fn.BackendOf(holder.Owner); b != mine {
			return problem.New(problem.CodeConflict, "%s %s is being executed by backend %q (instance %s), not this backend (%q); send the request to the backend executing it",
				what, id, b, holder.Owner, mine)
		}
	}
	return nil
}

// checkRunOwner is checkOwner for a benchmark run (its runner's lease).
func (a *API) checkRunOwner(ctx context.Context, run *evalrun.Run) error {
	return a.checkOwner(ctx, "benchmark run", run.ID, evalrun.Str(run.OwnerBackendID), evalrun.LeaseName(run.ID))
}

// checkWorkflowOwner is checkOwner for a workflow (and the leases of its benchmark runs).
func (a *API) checkWorkflowOwner(ctx context.Context, wf *workflow.Workflow) error {
	leases := make([]string, 0, len(wf.RunIDs()))
	for _, id := range wf.RunIDs() {
		leases = append(leases, evalrun.LeaseName(id))
	}
	return a.checkOwner(ctx, "workflow", wf.ID, wf.OwnerBackendID.Get(), leases...)
}
