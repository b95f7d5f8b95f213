package inventory

import (
	"encoding/json"
	"time"
)

// Ownership of a deployment execution: who made the deployment, and so who may clean it up.
const (
	// OwnershipExistingEndpoint: a user registered an endpoint that already serves; Lensfn never
	// stops it.
	OwnershipExistingEndpoint = "existing-endpoint"
	// OwnershipEvaluation: an evaluation workflow deployed it and removes it when done.
	OwnershipEvaluation = "evaluation"
)

// Statuses of the records.
const (
	StatusReady = "ready" // an execution that answers requests

	SessionActive = "active" // the session runs can use
	SessionClosed = "closed" // replaced by a newer session of its cluster

	HealthUnknown   = "unknown" // not probed yet
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"

	ServiceAvailable   = "available"   // at least one member is healthy
	ServiceUnavailable = "unavailable" // no member is healthy
)

// Cluster kinds.
const (
	ClusterLocal      = "local"      // the machine the stack runs on; no kubeconfig
	ClusterKubernetes = "kubernetes" // reached with a sealed kubeconfig
)

// Configuration artifact values the schema accepts.
const (
	ConfigurationSchemaV1 = "deployable-configuration.v1"
	ConfigurationGuide    = "guide"
	ConfigurationBaseline = "baseline"
	ConfigurationFormat   = "lensfn"
)

// Store kinds of the records.
const (
	KindCluster       = "cluster"
	KindClusterName   = "cluster-name" // one per cluster name, so names are unique
	KindSession       = "cluster-session"
	KindExecution     = "deployment-execution"
	KindModelService  = "model-service"
	KindConfiguration = "configuration"
)

// Cluster is a place deployments run; its kubeconfig is sealed and never serialised.
type Cluster struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Kind          string    `json:"kind"`
	Namespace     string    `json:"namespace,omitempty"`
	SessionID     string    `json:"sessionId"` // the active session
	HasKubeconfig bool      `json:"has_kubeconfig"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

type clusterDoc struct {
	Cluster
	SealedKubeconfig string `json:"sealed_kubeconfig,omitempty"`
}

// Session is one period of use of a cluster; runs and executions name it. A cluster has one
// active session; opening a new one closes the previous.
type Session struct {
	ID          string     `json:"id"`
	ClusterID   string     `json:"cluster_id"`
	ClusterName string     `json:"cluster_name"`
	ClusterKind string     `json:"cluster_kind"`
	Namespace   string     `json:"namespace,omitempty"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	ClosedAt    *time.Time `json:"closed_at,omitempty"`
}

// Execution is a deployment a benchmark can target: an OpenAI-compatible endpoint serving a
// model. The sealed API key and the list of runs using it stay in the stored document only.
type Execution struct {
	ID               string    `json:"id"`
	ClusterSessionID string    `json:"cluster_session_id"`
	Name             string    `json:"name"`
	Model            string    `json:"model"`
	Endpoint         string    `json:"endpoint"` // OpenAI base URL, e.g. http://127.0.0.1:8000/v1
	Namespace        string    `json:"namespace,omitempty"`
	Ownership        string    `json:"deployment_ownership"`
	Status           string    `json:"status"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at,omitzero"`
	// Models is what the endpoint listed when it was registered.
	Models []string `json:"models,omitempty"`
	// The fields below are set on what the deployer deploys (ownership evaluation): the
	// configuration it came from, the router's plain balanced URL (the kubernetes-service
	// baseline's baseline_url) and each replica's base URL, for a benchmark's evidence.
	ConfigurationID  string   `json:"configuration_id,omitempty"`
	ProviderRef      string   `json:"provider_ref,omitempty"`
	BaselineURL      string   `json:"baseline_url,omitempty"`
	ReplicaEndpoints []string `json:"replica_endpoints,omitempty"`
	HasAPIKey        bool     `json:"has_api_key"`
	// ActiveUses counts the non-terminal runs using the execution; delete is refused meanwhile.
	ActiveUses int `json:"active_uses"`
	// ClusterEvidence is what the deployer's knative provider last found on the cluster about
	// this execution's serving pods and their nodes (nil: not deployed on a Kubernetes cluster
	// by the deployer, or deployed before it gathered any).
	ClusterEvidence *ClusterEvidence `json:"cluster_evidence,omitempty"`
}

type executionDoc struct {
	Execution
	SealedAPIKey string   `json:"sealed_api_key,omitempty"`
	Users        []string `json:"users,omitempty"`
}

// Member is one execution behind a Model Service, with what its last probe found.
type Member struct {
	ExecutionID string     `json:"execution_id"`
	Endpoint    string     `json:"endpoint"`
	Model       string     `json:"model"`
	Health      string     `json:"health"`
	LastProbeAt *time.Time `json:"last_probe_at"`
	LastError   string     `json:"last_error,omitempty"`
	// ConsecutiveFailures counts the failed probes since the last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
}

// ModelService publishes a model name in front of member executions; requests go to the active
// member (a healthy one, kept while it stays healthy). The access key is stored as a hash.
type ModelService struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	PublishedName      string    `json:"published_name"`
	ClusterSessionID   string    `json:"cluster_session_id"`
	MemberExecutionIDs []string  `json:"member_execution_ids"`
	Members            []Member  `json:"members"`
	ActiveMember       *string   `json:"active_member_execution_id"`
	Status             string    `json:"status"`
	AccessKeyPrefix    string    `json:"access_key_prefix"` // the key's first characters, to tell keys apart
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

type modelServiceDoc struct {
	ModelService
	AccessKeyHash string `json:"access_key_hash"`
}

// Configuration is a deployable configuration artifact: content is kept as given (compacted
// JSON) and identified by its checksum.
type Configuration struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	SchemaVersion string          `json:"schema_version"`
	Type          string          `json:"type"`
	Format        string          `json:"format"`
	ProviderRef   string          `json:"provider_ref"`
	Content       json.RawMessage `json:"content,omitempty"`
	Provenance    json.RawMessage `json:"provenance,omitempty"`
	Checksum      string          `json:"checksum"`
	ContentBytes  int             `json:"content_bytes"`
	CreatedAt     time.Time       `json:"created_at"`
}

// Summary is the configuration without its content and provenance, as listings show it.
func (c Configuration) Summary() Configuration {
	c.Content, c.Provenance = nil, nil
	return c
}
