package knative

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"

	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/runtime/inventory"
)

// The core resources the cluster evidence reads (get and list only; nothing is changed).
var (
	PodGVR   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	NodeGVR  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	EventGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// Bounds of one gathering: what a cluster answers is capped before it is stored on the
// execution record.
const (
	// EvidenceTimeout bounds one gathering (every request of it).
	EvidenceTimeout = 20 * time.Second
	maxEvidencePods = 200
	maxNodes        = 32
	maxEvents       = 20
	maxEventsListed = 500
	maxMessage      = 400
)

// knativeServiceLabel is the label Knative Serving puts on every pod of a Service's Revisions.
const knativeServiceLabel = "serving.knative.dev/service"

// RBACHint is what a refused read asks of the cluster's operator: the identity of the session's
// kubeconfig needs these verbs (deploy/examples/target-cluster-rbac.yaml grants them).
const RBACHint = "the kubeconfig's identity needs get and list on pods and events in the namespace and get on nodes " +
	"(cluster-scoped); deploy/examples/target-cluster-rbac.yaml grants them"

// Evidence gathers what the cluster offers about a ready deployment: the serving pods of its
// Knative Services (phase, readiness, restarts, container images and states, the node each runs
// on), the accelerator facts of those nodes (GPU labels, allocatable extended resources, system
// facts) and the pods' Warning events. Every part that cannot be read is unavailable with the
// reason (the cluster's refusal, a timeout); nothing is made up. It reads with the session's
// kubeconfig like Deploy, and no credential is ever part of what it returns.
func (k *Provider) Evidence(ctx context.Context, d *deployer.Deployment, occasion string) inventory.ClusterEvidence {
	ev := inventory.ClusterEvidence{CollectedAt: time.Now().UTC(), Occasion: occasion, Namespace: d.Namespace}
	roles := map[string]string{} // Knative labels the pods with their Service, not with the Service's labels
	for _, o := range d.Objects {
		if o.Kind == "Service" {
			ev.Services = append(ev.Services, o.Name)
			roles[o.Name] = o.Role
		}
	}
	ctx, cancel := context.WithTimeout(ctx, EvidenceTimeout)
	defer cancel()
	if session, err := k.Inventory.Session(ctx, d.ClusterSessionID); err == nil {
		ev.Cluster = session.ClusterName
	}
	unavailable := func(reason string) inventory.ClusterEvidence {
		ev.Pods = inventory.PodsEvidence{Status: inventory.EvidenceUnavailable, Reason: reason, Items: []inventory.ClusterPod{}}
		ev.Nodes = inventory.NodesEvidence{Status: inventory.EvidenceUnavailable, Reason: reason, Items: []inventory.ClusterNode{}}
		ev.Events = inventory.EventsEvidence{Status: inventory.EvidenceUnavailable, Reason: reason, Items: []inventory.ClusterEvent{}}
		ev.Status, ev.Reason = inventory.EvidenceUnavailable, reason
		return ev
	}
	if len(ev.Services) == 0 {
		return unavailable("the deployment records no Knative Service")
	}
	c, ns, err := k.client(ctx, d)
	if err != nil {
		return unavailable("the cluster was not asked: " + err.Error())
	}
	if ev.Namespace == "" {
		ev.Namespace = ns
	}
	ev.Pods = pods(ctx, c, ev.Namespace, ev.Services, roles)
	ev.Nodes = nodes(ctx, c, ev.Pods)
	ev.Events = warnings(ctx, c, ev.Namespace, ev.Services)
	var reasons []string
	available, missing := 0, 0
	for _, part := range []struct{ name, status, reason string }{
		{"pods", ev.Pods.Status, ev.Pods.Reason}, {"nodes", ev.Nodes.Status, ev.Nodes.Reason}, {"events", ev.Events.Status, ev.Events.Reason}} {
		switch part.status {
		case inventory.EvidenceAvailable:
			available++
			continue
		case inventory.EvidenceUnavailable:
			missing++
		}
		reasons = append(reasons, part.name+": "+part.reason)
	}
	switch {
	case available == 3:
		ev.Status = inventory.EvidenceAvailable
	case missing == 3:
		ev.Status = inventory.EvidenceUnavailable
	default:
		ev.Status = inventory.EvidencePartial
	}
	ev.Reason = strings.Join(reasons, "; ")
	return ev
}

// pods lists the serving pods of the Services by the label Knative gives them.
func pods(ctx context.Context, c dynamic.Interface, ns string, services []string, roles map[string]string) inventory.PodsEvidence {
	out := inventory.PodsEvidence{Items: []inventory.ClusterPod{}}
	req, err := labels.NewRequirement(knativeServiceLabel, selection.In, services)
	if err != nil {
		out.Status, out.Reason = inventory.EvidenceUnavailable, "no pod selector: "+err.Error()
		return out
	}
	list, err := c.Resource(PodGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.NewSelector().Add(*req).String(),
		Limit: maxEvidencePods})
	if err != nil {
		out.Status, out.Reason = inventory.EvidenceUnavailable, refused("list pods in namespace "+ns, err)
		return out
	}
	for _, u := range list.Items {
		var p corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
			out.Status, out.Reason = inventory.EvidenceUnavailable, fmt.Sprintf("pod %s could not be read: %v", u.GetName(), err)
			return out
		}
		pod := podOf(&p)
		pod.Role = roles[pod.Service]
		out.Items = append(out.Items, pod)
	}
	slices.SortFunc(out.Items, func(a, b inventory.ClusterPod) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Name, b.Name))
	})
	switch {
	case len(out.Items) == 0:
		out.Status, out.Reason = inventory.EvidenceUnavailable,
			fmt.Sprintf("no pod labelled %s in (%s) was found in namespace %s (scaled to zero, or not scheduled)", knativeServiceLabel,
				strings.Join(services, ", "), ns)
	case list.GetContinue() != "":
		out.Status, out.Reason = inventory.EvidenceAvailable, fmt.Sprintf("only the first %d pods are listed", maxEvidencePods)
	default:
		out.Status = inventory.EvidenceAvailable
	}
	return out
}

func podOf(p *corev1.Pod) inventory.ClusterPod {
	out := inventory.ClusterPod{Name: p.Name, Service: p.Labels[knativeServiceLabel], Revision: p.Labels["serving.knative.dev/revision"], Phase: string(p.Status.Phase), Node: p.Spec.NodeName, PodIP: p.Status.PodIP,
		QOSClass: string(p.Status.QOSClass), Reason: p.Status.Reason, Containers: []inventory.ClusterContainer{}}
	if p.Status.StartTime != nil {
		t := p.Status.StartTime.UTC()
		out.Started = &t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range p.Status.ContainerStatuses {
		statuses[s.Name] = s
	}
	for _, c := range p.Spec.Containers {
		s, seen := statuses[c.Name]
		cc := inventory.ClusterContainer{Name: c.Name, Image: c.Image, ImageID: s.ImageID, Ready: s.Ready, RestartCount: s.RestartCount,
			Requests: quantities(c.Resources.Requests), Limits: quantities(c.Resources.Limits)}
		out.Restarts += s.RestartCount
		switch st := s.State; {
		case !seen:
			cc.State = "unknown"
		case st.Running != nil:
			cc.State = "running"
		case st.Waiting != nil:
			cc.State, cc.Reason = "waiting", st.Waiting.Reason
		case st.Terminated != nil:
			cc.State, cc.Reason = "terminated", termination(st.Terminated)
		default:
			cc.State = "unknown"
		}
		if t := s.LastTerminationState.Terminated; t != nil {
			cc.LastTermination = termination(t)
		}
		out.Containers = append(out.Containers, cc)
	}
	return out
}

func termination(t *corev1.ContainerStateTerminated) string {
	return fmt.Sprintf("%s, exit %d", cmp.Or(t.Reason, "Terminated"), t.ExitCode)
}

// quantities are cpu, memory and the extended resources (vendor/name) of a resource list.
func quantities(l corev1.ResourceList) map[string]string {
	var out map[string]string
	for name, q := range l {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.Contains(string(name), "/") {
			if out == nil {
				out = map[string]string{}
			}
			out[string(name)] = q.String()
		}
	}
	return out
}

// nodes reads the nodes the pods run on.
func nodes(ctx context.Context, c dynamic.Interface, pods inventory.PodsEvidence) inventory.NodesEvidence {
	out := inventory.NodesEvidence{Items: []inventory.ClusterNode{}}
	var names []string
	for _, p := range pods.Items {
		if p.Node != "" && !slices.Contains(names, p.Node) {
			names = append(names, p.Node)
		}
	}
	slices.Sort(names)
	switch {
	case pods.Status != inventory.EvidenceAvailable:
		out.Status, out.Reason = inventory.EvidenceUnavailable, "the serving pods are unknown, so are their nodes"
		return out
	case len(names) == 0:
		out.Status, out.Reason = inventory.EvidenceUnavailable, "no serving pod is scheduled on a node yet"
		return out
	}
	var failed []string
	for i, name := range names {
		if i == maxNodes {
			failed = append(failed, fmt.Sprintf("only the first %d of %d nodes are read", maxNodes, len(names)))
			break
		}
		u, err := c.Resource(NodeGVR).Get(ctx, name, metav1.GetOptions{})
		var n corev1.Node
		if err == nil {
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &n)
		}
		if err != nil {
			failed = append(failed, refused("get node "+name, err))
			if apierrors.IsForbidden(err) || errors.Is(err, context.DeadlineExceeded) {
				break // the next ones would be refused or late the same way
			}
			continue
		}
		out.Items = append(out.Items, nodeOf(&n))
	}
	switch {
	case len(failed) == 0:
		out.Status = inventory.EvidenceAvailable
	case len(out.Items) == 0:
		out.Status = inventory.EvidenceUnavailable
	default:
		out.Status = inventory.EvidencePartial
	}
	out.Reason = strings.Join(failed, "; ")
	return out
}

// acceleratorLabels are the node label prefixes kept: GPU feature discovery (NVIDIA, AMD,
// Intel, Habana), the clouds' accelerator labels, the instance type and the zone.
var acceleratorLabels = []string{"nvidia.com/", "amd.com/", "gpu.intel.com/", "habana.ai/", "aws.amazon.com/neuron",
	"cloud.google.com/gke-accelerator", "cloud.google.com/gke-tpu", "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone"}

func nodeOf(n *corev1.Node) inventory.ClusterNode {
	out := inventory.ClusterNode{Name: n.Name, Capacity: quantities(n.Status.Capacity), Allocatable: quantities(n.Status.Allocatable),
		Architecture: n.Status.NodeInfo.Architecture, OSImage: n.Status.NodeInfo.OSImage, KernelVersion: n.Status.NodeInfo.KernelVersion,
		ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion, KubeletVersion: n.Status.NodeInfo.KubeletVersion}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for key, value := range n.Labels {
		for _, prefix := range acceleratorLabels {
			if strings.HasPrefix(key, prefix) && len(out.Labels) < 64 {
				if out.Labels == nil {
					out.Labels = map[string]string{}
				}
				out.Labels[key] = value
				break
			}
		}
	}
	out.GPUProduct = cmp.Or(n.Labels["nvidia.com/gpu.product"], n.Labels["amd.com/gpu.product-name"], n.Labels["cloud.google.com/gke-accelerator"])
	out.GPUCount = cmp.Or(n.Labels["nvidia.com/gpu.count"], n.Labels["cloud.google.com/gke-accelerator-count"])
	for _, r := range []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu"} {
		if q, ok := n.Status.Allocatable[r]; ok {
			out.AllocatableGPU = q.String()
			break
		}
	}
	return out
}

// warnings lists the namespace's Warning events of pods and keeps the newest of the Services'.
// Knative names a Service's pods after its Revisions (<service>-<generation>-deployment-...),
// so they are found by name even when the pods themselves could not be listed.
func warnings(ctx context.Context, c dynamic.Interface, ns string, services []string) inventory.EventsEvidence {
	out := inventory.EventsEvidence{Items: []inventory.ClusterEvent{}}
	list, err := c.Resource(EventGVR).Namespace(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,type=Warning",
		Limit: maxEventsListed})
	if err != nil {
		out.Status, out.Reason = inventory.EvidenceUnavailable, refused("list events in namespace "+ns, err)
		return out
	}
	ours := func(pod string) bool {
		for _, s := range services {
			if strings.HasPrefix(pod, s+"-") {
				return true
			}
		}
		return false
	}
	for _, u := range list.Items {
		var e corev1.Event
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &e); err != nil {
			continue // an event the cluster's version shapes otherwise is no evidence either way
		}
		if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "Pod" || !ours(e.InvolvedObject.Name) {
			continue
		}
		out.Items = append(out.Items, inventory.ClusterEvent{Pod: e.InvolvedObject.Name, Reason: e.Reason,
			Message: truncate(e.Message, maxMessage), Count: max(e.Count, 1), LastSeen: lastSeen(&e)})
	}
	slices.SortStableFunc(out.Items, func(a, b inventory.ClusterEvent) int { return b.LastSeen.Compare(a.LastSeen) })
	out.Status = inventory.EvidenceAvailable
	if len(out.Items) > maxEvents {
		out.Reason = fmt.Sprintf("the newest %d of %d warnings", maxEvents, len(out.Items))
		out.Items = out.Items[:maxEvents]
	}
	return out
}

func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.UTC()
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.UTC()
	case !e.EventTime.IsZero():
		return e.EventTime.UTC()
	}
	return e.CreationTimestamp.UTC()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// refused says why a read failed: the cluster's own status (code, reason, message) with what
// the identity needs when it was forbidden, or the transport's error (which names the server
// and never a credential).
func refused(what string, err error) string {
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &status):
		s := status.Status()
		msg := fmt.Sprintf("the cluster refused to %s (%d %s): %s", what, s.Code, s.Reason, truncate(s.Message, maxMessage))
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			msg += "; " + RBACHint
		}
		return msg
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("the cluster did not answer to %s within %s", what, EvidenceTimeout)
	}
	return fmt.Sprintf("could not %s: %v", what, err)
}
