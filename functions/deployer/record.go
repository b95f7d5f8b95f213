package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// Kind is the state-store kind of deployment records.
const Kind = "deployment"

// Deployment statuses.
const (
	StatusDeploying     = "deploying"      // the provider is creating it (or its worker died doing so)
	StatusReady         = "ready"          // it answers; its execution is recorded
	StatusFailed        = "failed"         // it could not be brought up; what was started is stopped
	StatusCleaning      = "cleaning"       // cleanup was requested and runs
	StatusCleanupFailed = "cleanup-failed" // cleanup failed; a new cleanup request retries it
)

// Process is one child process of the local provider. StartTicks (the start time in
// /proc/<pid>/stat) tells it from a later process that reused the pid.
type Process struct {
	Role       string `json:"role"` // decode, prefill or router
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
	Port       int    `json:"port"`
	URL        string `json:"url"`
	Log        string `json:"log"`
}

// Object names one Kubernetes object the knative provider created.
type Object struct {
	APIVersion string `json:"api_version"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Role       string `json:"role"`
}

// Deployment is the stored record of one requested deployment.
type Deployment struct {
	ExecutionID      string    `json:"execution_id"`
	ConfigurationID  string    `json:"configuration_id"`
	ClusterSessionID string    `json:"cluster_session_id"`
	CaseRef          string    `json:"case_ref"`
	Name             string    `json:"name,omitempty"`
	Provider         string    `json:"provider,omitempty"` // local or knative
	ProviderRef      string    `json:"provider_ref,omitempty"`
	Model            string    `json:"model,omitempty"`
	Status           string    `json:"status"`
	Error            string    `json:"error,omitempty"`
	Endpoint         string    `json:"endpoint,omitempty"`
	BaselineURL      string    `json:"baseline_url,omitempty"`
	ReplicaEndpoints []string  `json:"replica_endpoints,omitempty"`
	Namespace        string    `json:"namespace,omitempty"`
	Processes        []Process `json:"processes,omitempty"`
	Objects          []Object  `json:"objects,omitempty"`
	// Attempts counts deploy (and cleanup) attempts, so each answer event has its own id.
	Attempts        int       `json:"attempts"`
	CleanupAttempts int       `json:"cleanup_attempts,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

// records wraps the store with the deployment kind.
type records struct{ store state.Store }

func (r records) create(ctx context.Context, d Deployment) error {
	doc, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = r.store.Create(ctx, state.Record{Kind: Kind, ID: d.ExecutionID, Status: d.Status, Doc: doc,
		Attrs: map[string]string{"provider": d.Provider, "cluster_session_id": d.ClusterSessionID}})
	return err
}

func (r records) get(ctx context.Context, id string) (Deployment, state.Record, error) {
	rec, err := r.store.Get(ctx, Kind, id)
	if err != nil {
		return Deployment{}, rec, err
	}
	var d Deployment
	if err := json.Unmarshal(rec.Doc, &d); err != nil {
		return Deployment{}, rec, fmt.Errorf("deployment %s: %w", id, err)
	}
	d.Status = rec.Status
	return d, rec, nil
}

// errUnchanged makes update return without writing.
var errUnchanged = errors.New("unchanged")

// update applies mutate to the stored deployment under a version check (retried on
// conflicts); with fence set, a write from a worker whose lease was taken over is refused.
func (r records) update(ctx context.Context, id string, fence state.Fence, mutate func(d *Deployment) error) (Deployment, error) {
	for range 32 {
		d, rec, err := r.get(ctx, id)
		if err != nil {
			return d, err
		}
		if err := mutate(&d); err != nil {
			if errors.Is(err, errUnchanged) {
				return d, nil
			}
			return d, err
		}
		if rec.Doc, err = json.Marshal(d); err != nil {
			return d, err
		}
		rec.Status = d.Status
		rec.Attrs = map[string]string{"provider": d.Provider, "cluster_session_id": d.ClusterSessionID}
		_, err = r.store.Update(ctx, rec, state.UpdateOptions{Fence: fence})
		if !errors.Is(err, state.ErrVersionConflict) {
			return d, err
		}
	}
	return Deployment{}, fmt.Errorf("deployment %s keeps changing", id)
}

func (r records) delete(ctx context.Context, id string) error {
	err := r.store.Delete(ctx, Kind, id, state.DeleteOptions{})
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	return err
}
