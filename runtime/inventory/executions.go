package inventory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// MaxExecutionUsers bounds how many runs may use one execution at a time.
const MaxExecutionUsers = 4096

func (d *executionDoc) view() Execution {
	e := d.Execution
	e.HasAPIKey = d.SealedAPIKey != ""
	e.ActiveUses = len(d.Users)
	return e
}

func executionAttrs(e Execution) map[string]string {
	return map[string]string{"cluster_session_id": e.ClusterSessionID, "ownership": e.Ownership, "model": e.Model}
}

// Execution returns the execution (a 404 problem when it is unknown).
func (r *Repo) Execution(ctx context.Context, id string) (Execution, error) {
	var d executionDoc
	if _, err := r.load(ctx, KindExecution, id, &d); err != nil {
		return Execution{}, err
	}
	return d.view(), nil
}

// ExecutionAPIKey opens the execution's sealed API key ("" when it has none).
func (r *Repo) ExecutionAPIKey(ctx context.Context, id string) (string, error) {
	var d executionDoc
	if _, err := r.load(ctx, KindExecution, id, &d); err != nil {
		return "", err
	}
	return r.open(d.SealedAPIKey, sealContext(KindExecution, id))
}

// PutExecution stores the execution, creating it or replacing the stored one (whose users it
// keeps; an empty apiKey then keeps the stored key too). The key is sealed for this record.
func (r *Repo) PutExecution(ctx context.Context, e Execution, apiKey string) error {
	if err := state.ValidateID(e.ID); err != nil {
		return err
	}
	if e.Ownership != OwnershipExistingEndpoint && e.Ownership != OwnershipEvaluation {
		return fmt.Errorf("%w: deployment ownership %q is neither %s nor %s", state.ErrInvalid, e.Ownership,
			OwnershipExistingEndpoint, OwnershipEvaluation)
	}
	if e.Endpoint == "" || e.Model == "" || e.ClusterSessionID == "" {
		return fmt.Errorf("%w: an execution needs an endpoint, a model and a cluster session", state.ErrInvalid)
	}
	if e.Status == "" {
		e.Status = StatusReady
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now()
	}
	e.UpdatedAt = now()
	sealed, err := r.seal(apiKey, sealContext(KindExecution, e.ID))
	if err != nil {
		return err
	}
	e.HasAPIKey, e.ActiveUses = false, 0
	err = r.create(ctx, KindExecution, e.ID, e.Status, e.CreatedAt, executionAttrs(e), searchOf(e.Name, e.Model, e.Endpoint),
		executionDoc{Execution: e, SealedAPIKey: sealed})
	if problem.CodeOf(err) != problem.CodeConflict {
		return err
	}
	_, err = update(ctx, r, KindExecution, e.ID, func(d *executionDoc, rec *state.Record) error {
		e.CreatedAt = d.CreatedAt
		d.Execution = e
		if sealed != "" {
			d.SealedAPIKey = sealed
		}
		rec.Status, rec.Attrs, rec.Search = e.Status, executionAttrs(e), searchOf(e.Name, e.Model, e.Endpoint)
		return nil
	})
	return err
}

// ExecutionQuery filters a listing of executions; empty fields match everything.
type ExecutionQuery struct {
	ClusterSessionID, Ownership, Status, Model string
	Page
}

// ListExecutions returns one page of executions, newest first, and the total matching.
func (r *Repo) ListExecutions(ctx context.Context, q ExecutionQuery) ([]Execution, int, error) {
	sq := state.Query{Kind: KindExecution, Offset: q.Offset, Limit: q.Limit,
		Attrs: map[string]string{"cluster_session_id": q.ClusterSessionID, "ownership": q.Ownership, "model": q.Model}}
	if q.Status != "" {
		sq.Status = []string{q.Status}
	}
	docs, total, err := list[executionDoc](ctx, r, sq)
	out := make([]Execution, len(docs))
	for i := range docs {
		out[i] = docs[i].view()
	}
	return out, total, err
}

func validHolder(holder string) error {
	if holder == "" || len(holder) > 200 || strings.ContainsFunc(holder, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return fmt.Errorf("%w: holder must be 1-200 printable characters", state.ErrInvalid)
	}
	return nil
}

// AcquireUse records that holder (a run) uses the execution, so it cannot be deleted until
// ReleaseUse. Acquiring again is a no-op; an unknown execution is a 404 problem.
func (r *Repo) AcquireUse(ctx context.Context, executionID, holder string) error {
	if err := validHolder(holder); err != nil {
		return err
	}
	_, err := update(ctx, r, KindExecution, executionID, func(d *executionDoc, _ *state.Record) error {
		if slices.Contains(d.Users, holder) {
			return nil
		}
		if len(d.Users) >= MaxExecutionUsers {
			return problem.New(problem.CodeConflict, "deployment execution %q is already used by %d runs", executionID, len(d.Users))
		}
		d.Users = append(d.Users, holder)
		return nil
	})
	return err
}

// ExecutionUsers returns the holders (run ids) that use the execution now; an unknown
// execution is a 404 problem.
func (r *Repo) ExecutionUsers(ctx context.Context, id string) ([]string, error) {
	var d executionDoc
	if _, err := r.load(ctx, KindExecution, id, &d); err != nil {
		return nil, err
	}
	return d.Users, nil
}

// ReleaseUse undoes AcquireUse; releasing a use that is not held, or of an execution that is
// gone, is not an error (a finished run releases whatever it holds).
func (r *Repo) ReleaseUse(ctx context.Context, executionID, holder string) error {
	_, err := update(ctx, r, KindExecution, executionID, func(d *executionDoc, _ *state.Record) error {
		d.Users = slices.DeleteFunc(d.Users, func(u string) bool { return u == holder })
		return nil
	})
	if problem.CodeOf(err) == problem.CodeNotFound {
		return nil
	}
	return err
}

// DeleteExecution removes the execution; a 409 problem while a run uses it or a model service
// lists it as a member.
func (r *Repo) DeleteExecution(ctx context.Context, id string) error {
	for range maxUpdateAttempts {
		var d executionDoc
		rec, err := r.load(ctx, KindExecution, id, &d)
		if err != nil {
			return err
		}
		if len(d.Users) > 0 {
			pruned, err := r.pruneEndedUsers(ctx, id, d.Users)
			if err != nil {
				return err
			}
			if !pruned {
				return problem.New(problem.CodeConflict, "deployment execution %q is used by %d active run(s) (%s); cancel or finish them first",
					id, len(d.Users), strings.Join(d.Users[:min(len(d.Users), 5)], ", "))
			}
			continue // every use was left behind by an ended run: look again without them
		}
		if group, err := r.groupWithMember(ctx, id); err != nil {
			return err
		} else if group != "" {
			return problem.New(problem.CodeConflict, "deployment execution %q is a member of model service %q; delete the model service first", id, group)
		}
		err = r.Store.Delete(ctx, KindExecution, id, state.DeleteOptions{Version: rec.Version})
		if errors.Is(err, state.ErrNotFound) {
			return notFound(KindExecution, id)
		}
		if !errors.Is(err, state.ErrVersionConflict) {
			return err
		}
	}
	return problem.New(problem.CodeConflict, "deployment execution %q keeps changing; try again", id)
}

// pruneEndedUsers removes users' uses from the execution when every one of them has ended
// (HolderEnded), and says whether it did. It stops at the first active holder: the delete is
// refused anyway, and a delete costs at most one look per holder up to it. Only the ended
// holders are removed, so a use taken meanwhile stays.
func (r *Repo) pruneEndedUsers(ctx context.Context, id string, users []string) (bool, error) {
	if r.HolderEnded == nil {
		return false, nil
	}
	for _, u := range users {
		ended, err := r.HolderEnded(ctx, u)
		if err != nil || !ended {
			return false, err
		}
	}
	_, err := update(ctx, r, KindExecution, id, func(d *executionDoc, _ *state.Record) error {
		d.Users = slices.DeleteFunc(d.Users, func(u string) bool { return slices.Contains(users, u) })
		return nil
	})
	return err == nil, err
}

func searchOf(parts ...string) string { return strings.Join(parts, " ") }
