package inventory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// AccessKeyPrefix starts every Model Service access key.
const AccessKeyPrefix = "lens-mk-"

// MaxMembers bounds the member executions of one Model Service.
const MaxMembers = 32

// ModelServiceSpec is what publishing a Model Service takes.
type ModelServiceSpec struct {
	Name, PublishedName, ClusterSessionID string
	MemberExecutionIDs                    []string
}

// newAccessKey returns a fresh key: the prefix and 32 random bytes, base64url.
func newAccessKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return AccessKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// hashAccessKey is how a key is stored: the keys are 256-bit random values, so a plain SHA-256
// is enough (no dictionary to guess from).
func hashAccessKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CreateModelService publishes a Model Service over member executions of one active session,
// each serving the published name (its model, or a name its endpoint listed), and returns it with its access key, which is shown only this once. Members start with unknown
// health until the prober records a probe.
func (r *Repo) CreateModelService(ctx context.Context, spec ModelServiceSpec) (ModelService, string, error) {
	if _, err := r.ActiveSession(ctx, spec.ClusterSessionID); err != nil {
		return ModelService{}, "", err
	}
	if len(spec.MemberExecutionIDs) == 0 || len(spec.MemberExecutionIDs) > MaxMembers {
		return ModelService{}, "", problem.New(problem.CodeBadRequest, "a model service needs 1 to %d member executions", MaxMembers)
	}
	members := make([]Member, 0, len(spec.MemberExecutionIDs))
	for i, id := range spec.MemberExecutionIDs {
		if slices.Contains(spec.MemberExecutionIDs[:i], id) {
			return ModelService{}, "", problem.New(problem.CodeBadRequest, "member execution %q is listed twice", id)
		}
		e, err := r.Execution(ctx, id)
		if problem.CodeOf(err) == problem.CodeNotFound {
			return ModelService{}, "", problem.New(problem.CodeBadRequest, "member execution %q does not exist", id)
		}
		if err != nil {
			return ModelService{}, "", err
		}
		// Requests carry the published name to the member directly (no gateway renames it), so
		// every member must serve it.
		if e.Model != spec.PublishedName && !slices.Contains(e.Models, spec.PublishedName) {
			return ModelService{}, "", problem.New(problem.CodeBadRequest, "member execution %q serves %q, not %q",
				id, e.Model, spec.PublishedName)
		}
		if e.ClusterSessionID != spec.ClusterSessionID {
			return ModelService{}, "", problem.New(problem.CodeBadRequest, "member execution %q belongs to cluster session %q, not %q",
				id, e.ClusterSessionID, spec.ClusterSessionID)
		}
		members = append(members, Member{ExecutionID: id, Endpoint: e.Endpoint, Model: e.Model, Health: HealthUnknown})
	}
	key := newAccessKey()
	s := ModelService{ID: NewID(), Name: spec.Name, PublishedName: spec.PublishedName, ClusterSessionID: spec.ClusterSessionID,
		MemberExecutionIDs: slices.Clone(spec.MemberExecutionIDs), Members: members, Status: ServiceUnavailable,
		AccessKeyPrefix: key[:len(AccessKeyPrefix)+4], CreatedAt: now()}
	s.UpdatedAt = s.CreatedAt
	err := r.create(ctx, KindModelService, s.ID, s.Status, s.CreatedAt, map[string]string{"cluster_session_id": s.ClusterSessionID,
		"published_name": s.PublishedName}, searchOf(s.Name, s.PublishedName), modelServiceDoc{ModelService: s, AccessKeyHash: hashAccessKey(key)})
	if err != nil {
		return ModelService{}, "", err
	}
	return s, key, nil
}

// ModelService returns the Model Service (a 404 problem when it is unknown).
func (r *Repo) ModelService(ctx context.Context, id string) (ModelService, error) {
	var d modelServiceDoc
	_, err := r.load(ctx, KindModelService, id, &d)
	return d.ModelService, err
}

// ModelServiceQuery filters a listing of Model Services; empty fields match everything.
type ModelServiceQuery struct {
	ClusterSessionID, PublishedName, Status string
	Page
}

// ListModelServices returns one page of Model Services, newest first, and the total matching.
func (r *Repo) ListModelServices(ctx context.Context, q ModelServiceQuery) ([]ModelService, int, error) {
	sq := state.Query{Kind: KindModelService, Offset: q.Offset, Limit: q.Limit,
		Attrs: map[string]string{"cluster_session_id": q.ClusterSessionID, "published_name": q.PublishedName}}
	if q.Status != "" {
		sq.Status = []string{q.Status}
	}
	docs, total, err := list[modelServiceDoc](ctx, r, sq)
	out := make([]ModelService, len(docs))
	for i := range docs {
		out[i] = docs[i].ModelService
	}
	return out, total, err
}

// DeleteModelService removes the Model Service (its member executions stay).
func (r *Repo) DeleteModelService(ctx context.Context, id string) error {
	if state.ValidateID(id) != nil {
		return notFound(KindModelService, id)
	}
	err := r.Store.Delete(ctx, KindModelService, id, state.DeleteOptions{})
	if errors.Is(err, state.ErrNotFound) {
		return notFound(KindModelService, id)
	}
	return err
}

// groupWithMember returns the id of a Model Service listing the execution ("" when none does).
func (r *Repo) groupWithMember(ctx context.Context, executionID string) (string, error) {
	for offset := 0; ; offset += state.MaxLimit {
		groups, total, err := r.ListModelServices(ctx, ModelServiceQuery{Page: Page{Offset: offset, Limit: state.MaxLimit}})
		if err != nil {
			return "", err
		}
		for _, g := range groups {
			if slices.Contains(g.MemberExecutionIDs, executionID) {
				return g.ID, nil
			}
		}
		if offset+len(groups) >= total || len(groups) == 0 {
			return "", nil
		}
	}
}

// Probe is the outcome of one health probe of a member.
type Probe struct {
	ExecutionID string
	Healthy     bool
	Error       string // why it is unhealthy; must hold no secret
	At          time.Time
}

// RecordProbes applies probe outcomes to the members and re-elects the active member: the
// current one while it stays healthy, else the first healthy member in order, else none.
func (r *Repo) RecordProbes(ctx context.Context, id string, probes []Probe) (ModelService, error) {
	d, err := update(ctx, r, KindModelService, id, func(d *modelServiceDoc, rec *state.Record) error {
		for _, p := range probes {
			i := slices.IndexFunc(d.Members, func(m Member) bool { return m.ExecutionID == p.ExecutionID })
			if i < 0 {
				continue
			}
			m := &d.Members[i]
			at := p.At.UTC().Truncate(time.Millisecond)
			m.LastProbeAt = &at
			if p.Healthy {
				m.Health, m.LastError, m.ConsecutiveFailures = HealthHealthy, "", 0
			} else {
				m.Health, m.LastError = HealthUnhealthy, p.Error
				m.ConsecutiveFailures++
			}
		}
		d.ActiveMember = electActive(d.Members, d.ActiveMember)
		d.Status = ServiceUnavailable
		if d.ActiveMember != nil {
			d.Status = ServiceAvailable
		}
		d.UpdatedAt = now()
		rec.Status = d.Status
		return nil
	})
	return d.ModelService, err
}

func electActive(members []Member, current *string) *string {
	healthy := func(id string) bool {
		return slices.ContainsFunc(members, func(m Member) bool { return m.ExecutionID == id && m.Health == HealthHealthy })
	}
	if current != nil && healthy(*current) {
		return current
	}
	for _, m := range members {
		if m.Health == HealthHealthy {
			id := m.ExecutionID
			return &id
		}
	}
	return nil
}

// ResolveModelService checks the access key and returns the group's active member with the
// published model name requests must carry. Problems: 404 unknown group, 401 no key, 403 a key
// that is not this group's, 409 no healthy member.
func (r *Repo) ResolveModelService(ctx context.Context, groupID, accessKey string) (Execution, string, error) {
	var d modelServiceDoc
	if _, err := r.load(ctx, KindModelService, groupID, &d); err != nil {
		return Execution{}, "", err
	}
	if accessKey == "" {
		return Execution{}, "", problem.New(problem.CodeUnauthorized, "model service %q needs its access key (%s...) as api_key", groupID, d.AccessKeyPrefix)
	}
	if !strings.HasPrefix(accessKey, AccessKeyPrefix) ||
		subtle.ConstantTimeCompare([]byte(hashAccessKey(accessKey)), []byte(d.AccessKeyHash)) != 1 {
		return Execution{}, "", problem.New(problem.CodeForbidden, "the api_key is not the access key of model service %q", groupID)
	}
	if d.ActiveMember == nil {
		return Execution{}, "", problem.New(problem.CodeConflict, "model service %q has no healthy member right now", groupID)
	}
	e, err := r.Execution(ctx, *d.ActiveMember)
	if problem.CodeOf(err) == problem.CodeNotFound {
		return Execution{}, "", problem.New(problem.CodeConflict, "the active member of model service %q no longer exists", groupID)
	}
	return e, d.PublishedName, err
}
