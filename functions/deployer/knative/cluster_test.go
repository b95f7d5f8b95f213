package knative_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
)

// fakeCluster is a Kubernetes API server on loopback (TLS, bearer token) that serves what the
// knative provider uses: Knative Services (create, get, list by label, delete; created Ready,
// each with one pod the way Knative would run it), pods listed by label selector, nodes, and
// events listed by field selector. Reads a test forbids answer 403 with the API server's Status.
type fakeCluster struct {
	t      *testing.T
	token  string
	server *httptest.Server

	mu       sync.Mutex
	services map[string]map[string]any // by namespace/name
	pods     map[string]map[string]any // by namespace/name
	nodes    map[string]map[string]any
	events   []map[string]any
	forbid   map[string]bool // resource (pods, nodes, events) → 403
	// nodeOf picks the node of a Service's pod (default "node-1").
	nodeOf func(service string) string
	// seen are the requests, "METHOD path?query".
	seen []string
}

func newFakeCluster(t *testing.T, token string) *fakeCluster {
	c := &fakeCluster{t: t, token: token, services: map[string]map[string]any{}, pods: map[string]map[string]any{},
		nodes: map[string]map[string]any{}, forbid: map[string]bool{}}
	c.server = httptest.NewTLSServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.server.Close)
	return c
}

// kubeconfig reaches the fake cluster with its token, trusting its certificate.
func (c *fakeCluster) kubeconfig() string {
	return kubeconfigtest.TokenTrusting(c.server.URL, c.token, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.server.Certificate().Raw}))
}

func (c *fakeCluster) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

func (c *fakeCluster) status(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"message": message, "reason": reason, "code": code})
}

func (c *fakeCluster) write(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

func list(kind string, items []map[string]any) map[string]any {
	if items == nil {
		items = []map[string]any{}
	}
	return map[string]any{"kind": kind, "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "1"}, "items": items}
}

func labelsOf(obj map[string]any) labels.Set {
	set := labels.Set{}
	meta, _ := obj["metadata"].(map[string]any)
	raw, _ := meta["labels"].(map[string]any)
	for k, v := range raw {
		set[k], _ = v.(string)
	}
	return set
}

func (c *fakeCluster) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	if r.Header.Get("Authorization") != "Bearer "+c.token {
		c.status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	user := `User "system:serviceaccount:eval:lensfn-deployer"`
	switch {
	// /apis/serving.knative.dev/v1/namespaces/{ns}/services[/{name}]
	case len(parts) >= 6 && parts[0] == "apis" && parts[1] == "serving.knative.dev" && parts[5] == "services":
		ns := parts[4]
		switch {
		case len(parts) == 6 && r.Method == http.MethodPost:
			var obj map[string]any
			if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
				c.status(w, http.StatusBadRequest, "BadRequest", err.Error())
				return
			}
			name := obj["metadata"].(map[string]any)["name"].(string)
			if c.services[ns+"/"+name] != nil {
				c.status(w, http.StatusConflict, "AlreadyExists", fmt.Sprintf("services.serving.knative.dev %q already exists", name))
				return
			}
			obj["status"] = map[string]any{"url": "http://" + name + "." + ns + ".example.com",
				"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
			c.services[ns+"/"+name] = obj
			c.runPod(ns, name, obj)
			c.write(w, http.StatusCreated, obj)
		case len(parts) == 6 && r.Method == http.MethodGet:
			sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
			if err != nil {
				c.status(w, http.StatusBadRequest, "BadRequest", err.Error())
				return
			}
			var items []map[string]any
			for key, s := range c.services {
				if strings.HasPrefix(key, ns+"/") && sel.Matches(labelsOf(s)) {
					items = append(items, s)
				}
			}
			out := list("ServiceList", items)
			out["apiVersion"] = "serving.knative.dev/v1"
			c.write(w, http.StatusOK, out)
		case len(parts) == 7 && r.Method == http.MethodGet:
			if s := c.services[ns+"/"+parts[6]]; s != nil {
				c.write(w, http.StatusOK, s)
				return
			}
			c.status(w, http.StatusNotFound, "NotFound", fmt.Sprintf("services.serving.knative.dev %q not found", parts[6]))
		case len(parts) == 7 && r.Method == http.MethodDelete:
			delete(c.services, ns+"/"+parts[6])
			for key, p := range c.pods {
				if labelsOf(p)["serving.knative.dev/service"] == parts[6] {
					delete(c.pods, key)
				}
			}
			c.write(w, http.StatusOK, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
		default:
			c.status(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
		}
	// /api/v1/namespaces/{ns}/pods
	case len(parts) == 5 && parts[0] == "api" && parts[4] == "pods" && r.Method == http.MethodGet:
		if c.forbid["pods"] {
			c.status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf(`pods is forbidden: %s cannot list resource "pods" in API group "" in the namespace %q`, user, parts[3]))
			return
		}
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			c.status(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		var items []map[string]any
		for key, p := range c.pods {
			if strings.HasPrefix(key, parts[3]+"/") && sel.Matches(labelsOf(p)) {
				items = append(items, p)
			}
		}
		c.write(w, http.StatusOK, list("PodList", items))
	// /api/v1/nodes/{name}
	case len(parts) == 4 && parts[0] == "api" && parts[2] == "nodes" && r.Method == http.MethodGet:
		if c.forbid["nodes"] {
			c.status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf(`nodes %q is forbidden: %s cannot get resource "nodes" in API group "" at the cluster scope`, parts[3], user))
			return
		}
		if n := c.nodes[parts[3]]; n != nil {
			c.write(w, http.StatusOK, n)
			return
		}
		c.status(w, http.StatusNotFound, "NotFound", fmt.Sprintf("nodes %q not found", parts[3]))
	// /api/v1/namespaces/{ns}/events
	case len(parts) == 5 && parts[0] == "api" && parts[4] == "events" && r.Method == http.MethodGet:
		if c.forbid["events"] {
			c.status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf(`events is forbidden: %s cannot list resource "events"`, user))
			return
		}
		var items []map[string]any
		for _, e := range c.events {
			if e["metadata"].(map[string]any)["namespace"] == parts[3] && fieldsMatch(e, r.URL.Query().Get("fieldSelector")) {
				items = append(items, e)
			}
		}
		c.write(w, http.StatusOK, list("EventList", items))
	default:
		c.status(w, http.StatusNotFound, "NotFound", "the fake cluster does not serve "+r.URL.Path)
	}
}

// fieldsMatch applies an equality field selector (a=b,c=d) to an event the way the API server does.
func fieldsMatch(e map[string]any, selector string) bool {
	if selector == "" {
		return true
	}
	for _, term := range strings.Split(selector, ",") {
		key, want, _ := strings.Cut(term, "=")
		var got any = e
		for _, k := range strings.Split(key, ".") {
			m, _ := got.(map[string]any)
			got = m[k]
		}
		if got != want {
			return false
		}
	}
	return true
}

// runPod runs one pod of a created Service, as Knative's first Revision would: labelled with
// its Service and Revision, the Service's container, scheduled on a node, ready.
func (c *fakeCluster) runPod(ns, service string, svc map[string]any) {
	node := "node-1"
	if c.nodeOf != nil {
		node = c.nodeOf(service)
	}
	spec := svc["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	container := spec["containers"].([]any)[0].(map[string]any)
	name := service + "-00001-deployment-5d8f7c9b6d-x2x4z"
	c.pods[ns+"/"+name] = map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{
			"serving.knative.dev/service": service, "serving.knative.dev/revision": service + "-00001", "app": service + "-00001"}},
		"spec": map[string]any{"nodeName": node, "containers": []any{
			map[string]any{"name": container["name"], "image": container["image"],
				"resources": map[string]any{"requests": map[string]any{"cpu": "1", "memory": "2Gi"}, "limits": map[string]any{"nvidia.com/gpu": "1"}}},
			map[string]any{"name": "queue-proxy", "image": "gcr.io/knative-releases/queue@sha256:" + strings.Repeat("a", 64)}}},
		"status": map[string]any{"phase": "Running", "podIP": "10.0.0.7", "qosClass": "Burstable", "startTime": "2026-12-05T03:00:00Z",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
			"containerStatuses": []any{
				map[string]any{"name": container["name"], "image": container["image"], "imageID": "registry.example/sim@sha256:" + strings.Repeat("b", 64),
					"ready": true, "restartCount": 0, "state": map[string]any{"running": map[string]any{"startedAt": "2026-12-05T03:00:05Z"}}},
				map[string]any{"name": "queue-proxy", "image": "gcr.io/knative-releases/queue", "ready": true, "restartCount": 0,
					"state": map[string]any{"running": map[string]any{}}}}},
	}
}

// restart marks the first container of the Service's pod restarted n times, last OOMKilled.
func (c *fakeCluster) restart(service string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pods {
		if labelsOf(p)["serving.knative.dev/service"] != service {
			continue
		}
		st := p["status"].(map[string]any)["containerStatuses"].([]any)[0].(map[string]any)
		st["restartCount"] = n
		st["lastState"] = map[string]any{"terminated": map[string]any{"reason": "OOMKilled", "exitCode": 137}}
	}
}

// gpuNode adds a node with NVIDIA GPU feature discovery's labels and allocatable GPUs.
func (c *fakeCluster) gpuNode(name, product string, gpus int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[name] = map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "labels": map[string]any{
			"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": fmt.Sprint(gpus), "nvidia.com/gpu.memory": "81559",
			"node.kubernetes.io/instance-type": "p5.48xlarge", "kubernetes.io/hostname": name, "team": "unrelated"}},
		"status": map[string]any{
			"capacity":    map[string]any{"cpu": "192", "memory": "2063731Mi", "nvidia.com/gpu": fmt.Sprint(gpus), "pods": "110"},
			"allocatable": map[string]any{"cpu": "191", "memory": "2000000Mi", "nvidia.com/gpu": fmt.Sprint(gpus), "pods": "110"},
			"conditions":  []any{map[string]any{"type": "Ready", "status": "True"}},
			"nodeInfo": map[string]any{"architecture": "amd64", "osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0-1051-aws",
				"containerRuntimeVersion": "containerd://1.7.13", "kubeletVersion": "v1.29.2",
				"machineID": "m", "systemUUID": "s", "bootID": "b", "kubeProxyVersion": "v1.29.2", "operatingSystem": "linux"}}}
}

// warn records a Warning event of a pod (and type can be Normal).
func (c *fakeCluster) event(ns, pod, typ, reason, message string, count int, last string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"name": fmt.Sprintf("%s.%d", pod, len(c.events)), "namespace": ns},
		"involvedObject": map[string]any{"kind": "Pod", "name": pod, "namespace": ns},
		"type":           typ, "reason": reason, "message": message, "count": count, "lastTimestamp": last})
}

// podOfService is the name of the Service's pod.
func (c *fakeCluster) podOfService(service string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pods {
		if labelsOf(p)["serving.knative.dev/service"] == service {
			return p["metadata"].(map[string]any)["name"].(string)
		}
	}
	return ""
}
