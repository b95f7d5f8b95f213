package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/kubeconfig"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// ClusterSpec is what registering a cluster takes.
type ClusterSpec struct {
	Name, Kind, Namespace string
	Kubeconfig            string // sealed; required for kubernetes, refused for local
}

// nameID is the id of a cluster's name record: names are free text, ids are not.
func nameID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

// CreateCluster registers a cluster under a unique name and opens its first session.
// CheckKubeconfigServer refuses a kubeconfig whose server the endpoint policy does not allow
// (a metadata address, a denied network): the deployer would send the cluster's credentials
// there. A server that does not resolve now is left to the deployer's dial, which applies the
// policy again.
func (r *Repo) CheckKubeconfigServer(ctx context.Context, creds kubeconfig.Credentials) error {
	if err := r.Endpoints.Check(ctx, creds.Server); errors.Is(err, egress.ErrNotAllowed) {
		return problem.New(problem.CodeBadRequest, "the kubeconfig's server is refused: %v", egress.ErrNotAllowed)
	}
	return nil
}

func (r *Repo) CreateCluster(ctx context.Context, spec ClusterSpec) (Cluster, Session, error) {
	switch {
	case spec.Kind != ClusterLocal && spec.Kind != ClusterKubernetes:
		return Cluster{}, Session{}, problem.New(problem.CodeBadRequest, "cluster kind %q is neither %s nor %s", spec.Kind, ClusterLocal, ClusterKubernetes)
	case spec.Kind == ClusterKubernetes && spec.Kubeconfig == "":
		return Cluster{}, Session{}, problem.New(problem.CodeBadRequest, "a kubernetes cluster needs a kubeconfig")
	case spec.Kind == ClusterLocal && spec.Kubeconfig != "":
		return Cluster{}, Session{}, problem.New(problem.CodeBadRequest, "a local cluster takes no kubeconfig")
	}
	if spec.Kubeconfig != "" {
		// Every caller, not only inventory-api's route (which answers the same refusal as a 422
		// naming the field): the deployer builds its client from what is stored here.
		creds, err := kubeconfig.Parse([]byte(spec.Kubeconfig))
		if err != nil {
			return Cluster{}, Session{}, problem.Wrap(problem.CodeBadRequest, err, "the kubeconfig is refused")
		}
		if err := r.CheckKubeconfigServer(ctx, creds); err != nil {
			return Cluster{}, Session{}, err
		}
	}
	c := Cluster{ID: NewID(), Name: spec.Name, Kind: spec.Kind, Namespace: spec.Namespace,
		HasKubeconfig: spec.Kubeconfig != "", CreatedAt: now()}
	c.UpdatedAt = c.CreatedAt
	sealed, err := r.seal(spec.Kubeconfig, sealContext(KindCluster, c.ID))
	if err != nil {
		return Cluster{}, Session{}, err
	}
	// The name record claims the name atomically; it is removed again when the rest fails.
	if err := r.create(ctx, KindClusterName, nameID(c.Name), "taken", c.CreatedAt, nil, "", map[string]string{"cluster_id": c.ID}); err != nil {
		if problem.CodeOf(err) == problem.CodeConflict {
			return Cluster{}, Session{}, problem.New(problem.CodeConflict, "a cluster named %q is already registered", c.Name)
		}
		return Cluster{}, Session{}, err
	}
	s := Session{ID: NewID(), ClusterID: c.ID, ClusterName: c.Name, ClusterKind: c.Kind, Namespace: c.Namespace,
		Status: SessionActive, CreatedAt: c.CreatedAt}
	c.SessionID = s.ID
	err = r.createSession(ctx, s)
	if err == nil {
		err = r.create(ctx, KindCluster, c.ID, "registered", c.CreatedAt, map[string]string{"kind": c.Kind}, c.Name,
			clusterDoc{Cluster: c, SealedKubeconfig: sealed})
	}
	if err != nil {
		_ = r.Store.Delete(ctx, KindClusterName, nameID(c.Name), state.DeleteOptions{})
		_ = r.Store.Delete(ctx, KindSession, s.ID, state.DeleteOptions{})
		return Cluster{}, Session{}, err
	}
	return c, s, nil
}

func (r *Repo) createSession(ctx context.Context, s Session) error {
	return r.create(ctx, KindSession, s.ID, s.Status, s.CreatedAt, map[string]string{"cluster_id": s.ClusterID}, "", s)
}

// Cluster returns the cluster (a 404 problem when it is unknown).
func (r *Repo) Cluster(ctx context.Context, id string) (Cluster, error) {
	var d clusterDoc
	_, err := r.load(ctx, KindCluster, id, &d)
	return d.Cluster, err
}

// ClusterByName returns the cluster registered under name (a 404 problem when none is).
func (r *Repo) ClusterByName(ctx context.Context, name string) (Cluster, error) {
	rec, err := r.Store.Get(ctx, KindClusterName, nameID(name))
	if errors.Is(err, state.ErrNotFound) {
		return Cluster{}, problem.New(problem.CodeNotFound, "no cluster is named %q", name)
	}
	if err != nil {
		return Cluster{}, err
	}
	var ref struct {
		ClusterID string `json:"cluster_id"`
	}
	if err := json.Unmarshal(rec.Doc, &ref); err != nil {
		return Cluster{}, err
	}
	return r.Cluster(ctx, ref.ClusterID)
}

// ClusterKubeconfig opens the cluster's sealed kubeconfig ("" for a local cluster).
func (r *Repo) ClusterKubeconfig(ctx context.Context, id string) (string, error) {
	var d clusterDoc
	if _, err := r.load(ctx, KindCluster, id, &d); err != nil {
		return "", err
	}
	return r.open(d.SealedKubeconfig, sealContext(KindCluster, id))
}

// ListClusters returns one page of clusters, newest first, and the total.
func (r *Repo) ListClusters(ctx context.Context, p Page) ([]Cluster, int, error) {
	docs, total, err := list[clusterDoc](ctx, r, state.Query{Kind: KindCluster, Offset: p.Offset, Limit: p.Limit})
	out := make([]Cluster, len(docs))
	for i := range docs {
		out[i] = docs[i].Cluster
	}
	return out, total, err
}

// Session returns the cluster session (a 404 problem when it is unknown).
func (r *Repo) Session(ctx context.Context, id string) (Session, error) {
	var s Session
	_, err := r.load(ctx, KindSession, id, &s)
	return s, err
}

// ActiveSession returns the session when it is active: 404 when unknown, 409 when closed.
func (r *Repo) ActiveSession(ctx context.Context, id string) (Session, error) {
	s, err := r.Session(ctx, id)
	if err == nil && s.Status != SessionActive {
		return s, problem.New(problem.CodeConflict, "cluster session %q is %s; use the cluster's active session (GET /api/cluster/clusters/%s)",
			id, s.Status, s.ClusterID)
	}
	return s, err
}

// OpenSession starts a new active session of the cluster and closes the one it replaces.
func (r *Repo) OpenSession(ctx context.Context, clusterID string) (Session, error) {
	c, err := r.Cluster(ctx, clusterID)
	if err != nil {
		return Session{}, err
	}
	s := Session{ID: NewID(), ClusterID: c.ID, ClusterName: c.Name, ClusterKind: c.Kind, Namespace: c.Namespace,
		Status: SessionActive, CreatedAt: now()}
	if err := r.createSession(ctx, s); err != nil {
		return Session{}, err
	}
	var previous string
	_, err = update(ctx, r, KindCluster, c.ID, func(d *clusterDoc, _ *state.Record) error {
		previous = d.SessionID
		d.SessionID, d.UpdatedAt = s.ID, s.CreatedAt
		return nil
	})
	if err != nil {
		_ = r.Store.Delete(ctx, KindSession, s.ID, state.DeleteOptions{})
		return Session{}, err
	}
	if previous != "" && previous != s.ID {
		if err := r.closeSession(ctx, previous); err != nil {
			return s, fmt.Errorf("inventory: session %s opened but the previous one was not closed: %w", s.ID, err)
		}
	}
	return s, nil
}

func (r *Repo) closeSession(ctx context.Context, id string) error {
	_, err := update(ctx, r, KindSession, id, func(s *Session, rec *state.Record) error {
		if s.Status == SessionClosed {
			return nil
		}
		at := now()
		s.Status, s.ClosedAt, rec.Status = SessionClosed, &at, SessionClosed
		return nil
	})
	if problem.CodeOf(err) == problem.CodeNotFound {
		return nil
	}
	return err
}
