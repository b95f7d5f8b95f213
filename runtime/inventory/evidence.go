package inventory

import (
	"context"
	"time"

	"github.com/lensfn/lensfn/runtime/state"
)

// Evidence statuses: every part of ClusterEvidence is available (found), or unavailable with
// the reason; the whole is partial when some parts are unavailable.
const (
	EvidenceAvailable   = "available"
	EvidencePartial     = "partial"
	EvidenceUnavailable = "unavailable"
)

// Occasions of a ClusterEvidence gathering.
const (
	// EvidenceAtReady: gathered when the deployment became ready, before any run used it.
	EvidenceAtReady = "deployment-ready"
	// EvidenceInUse: refreshed by the deployer while at least one run used the execution.
	EvidenceInUse = "in-use-refresh"
)

// ClusterEvidence is what a Kubernetes cluster offers about a deployed execution, gathered by
// the deployer (the only component holding the cluster's credentials) and read by the
// benchmark runner into a run's diagnostics: the serving pods of its Knative Services, the
// accelerator facts of the nodes they run on, and the pods' warning events. It never holds a
// credential.
type ClusterEvidence struct {
	Status      string    `json:"status"`           // available, partial or unavailable
	Reason      string    `json:"reason,omitempty"` // why something is unavailable
	CollectedAt time.Time `json:"collected_at"`
	Occasion    string    `json:"occasion"` // EvidenceAtReady or EvidenceInUse
	Cluster     string    `json:"cluster,omitempty"`
	Namespace   string    `json:"namespace,omitempty"`
	// Services are the Knative Services whose pods were looked for.
	Services []string       `json:"services,omitempty"`
	Pods     PodsEvidence   `json:"pods"`
	Nodes    NodesEvidence  `json:"nodes"`
	Events   EventsEvidence `json:"events"`
}

// PodsEvidence is the serving pods of a deployment's Services.
type PodsEvidence struct {
	Status string       `json:"status"`
	Reason string       `json:"reason,omitempty"`
	Items  []ClusterPod `json:"items"`
}

// ClusterPod is one serving pod.
type ClusterPod struct {
	Name     string     `json:"name"`
	Service  string     `json:"service"`        // its Knative Service
	Role     string     `json:"role,omitempty"` // decode, prefill or router
	Revision string     `json:"revision,omitempty"`
	Phase    string     `json:"phase"`
	Ready    bool       `json:"ready"`
	Restarts int32      `json:"restarts"` // over all its containers
	Node     string     `json:"node,omitempty"`
	PodIP    string     `json:"pod_ip,omitempty"`
	QOSClass string     `json:"qos_class,omitempty"`
	Started  *time.Time `json:"started_at,omitempty"`
	// Reason is the pod's own status reason (Evicted, for one), if any.
	Reason     string             `json:"reason,omitempty"`
	Containers []ClusterContainer `json:"containers"`
}

// ClusterContainer is one container of a serving pod: its image as run and its state.
type ClusterContainer struct {
	Name         string `json:"name"`
	Image        string `json:"image"`
	ImageID      string `json:"image_id,omitempty"` // the digest the node pulled
	Ready        bool   `json:"ready"`
	RestartCount int32  `json:"restart_count"`
	State        string `json:"state"`            // running, waiting or terminated
	Reason       string `json:"reason,omitempty"` // of a waiting or terminated state (CrashLoopBackOff, OOMKilled)
	// LastTermination is the reason and exit code of the previous run of a restarted
	// container ("OOMKilled, exit 137").
	LastTermination string `json:"last_termination,omitempty"`
	// Resources are the container's requests and limits (cpu, memory, accelerators).
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// NodesEvidence is the nodes the serving pods run on.
type NodesEvidence struct {
	Status string        `json:"status"`
	Reason string        `json:"reason,omitempty"`
	Items  []ClusterNode `json:"items"`
}

// ClusterNode is one node's accelerator facts as the cluster declares them (labels of the
// NVIDIA GPU feature discovery and the like, extended resources), not measurements.
type ClusterNode struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// GPUProduct and GPUCount are the nvidia.com/gpu.product and nvidia.com/gpu.count labels
	// (or the other vendors' equivalents); AllocatableGPU is the node's allocatable nvidia.com/gpu.
	GPUProduct     string `json:"gpu_product,omitempty"`
	GPUCount       string `json:"gpu_count,omitempty"`
	AllocatableGPU string `json:"allocatable_gpu,omitempty"`
	// Labels are the node's accelerator and machine labels (nvidia.com/gpu.*, amd.com/gpu.*,
	// cloud accelerator and instance-type labels).
	Labels map[string]string `json:"labels,omitempty"`
	// Capacity and Allocatable are cpu, memory and every extended resource (vendor/resource).
	Capacity    map[string]string `json:"capacity,omitempty"`
	Allocatable map[string]string `json:"allocatable,omitempty"`
	// The node's system facts.
	Architecture     string `json:"architecture,omitempty"`
	OSImage          string `json:"os_image,omitempty"`
	KernelVersion    string `json:"kernel_version,omitempty"`
	ContainerRuntime string `json:"container_runtime,omitempty"`
	KubeletVersion   string `json:"kubelet_version,omitempty"`
}

// EventsEvidence is the serving pods' Warning events.
type EventsEvidence struct {
	Status string         `json:"status"`
	Reason string         `json:"reason,omitempty"`
	Items  []ClusterEvent `json:"items"`
}

// ClusterEvent is one Warning event of a serving pod.
type ClusterEvent struct {
	Pod      string    `json:"pod"`
	Reason   string    `json:"reason"`
	Message  string    `json:"message"`
	Count    int32     `json:"count"`
	LastSeen time.Time `json:"last_seen,omitzero"`
}

// SetExecutionClusterEvidence stores ev on the execution (its other fields, its key and its
// users unchanged); an unknown execution is a 404 problem.
func (r *Repo) SetExecutionClusterEvidence(ctx context.Context, id string, ev ClusterEvidence) error {
	_, err := update(ctx, r, KindExecution, id, func(d *executionDoc, _ *state.Record) error {
		d.ClusterEvidence = &ev
		return nil
	})
	return err
}
