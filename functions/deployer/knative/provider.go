package knative

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/knativeadmission"
	"github.com/lensfn/lensfn/runtime/kubeconfig"
)

// ServiceGVR is the resource of Knative Services.
var ServiceGVR = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}

// Default images of the knative provider: the ko references the manifests use (ko resolves them
// when the deployer itself is built with ko; an operator may pin built images instead).
const (
	DefaultSimulatorImage = "ko://github.com/lensfn/lensfn/functions/inferencesim/cmd/inference-sim"
	DefaultRouterImage    = "ko://github.com/lensfn/lensfn/functions/inferencerouter/cmd/inference-router"
)

// ServingConfig is the knative-serving configuration deploy/knative declares (its
// config-features.yaml; a test keeps the two equal). The knative provider checks what it creates
// under exactly these features, so an object passes here only where the cluster the deployment
// targets admits it.
var ServingConfig = map[string]map[string]string{
	"config-features": {
		"kubernetes.podspec-persistent-volume-claim": "enabled",
		"kubernetes.podspec-persistent-volume-write": "enabled",
	},
}

// NewAdmission builds the check the knative provider runs on every object before it sends it:
// Knative Serving's own SetDefaults and Validate under ServingConfig, and the Service CRD schema.
func NewAdmission() (*knativeadmission.Validator, error) {
	return knativeadmission.New(knativeadmission.Options{ServingConfig: ServingConfig})
}

// Provider is the knative provider: one Knative Service per replica (min = max scale 1, so the
// replica count is the configuration's and the router can address each replica) and, where the
// configuration routes, a router Service in front, created with client-go's dynamic client
// and the cluster session's kubeconfig.
type Provider struct {
	Inventory      *inventory.Repo
	ReadyTimeout   time.Duration
	SimulatorImage string // default DefaultSimulatorImage
	RouterImage    string // default DefaultRouterImage
	// NewClient builds the client from the REST config RESTConfig made of the session's
	// kubeconfig (default: client-go's dynamic client; tests pass the fake).
	NewClient func(*rest.Config) (dynamic.Interface, error)
	// Poll is the Ready-condition poll period (default 1s).
	Poll time.Duration
	// Admission checks every object before it is created (default NewAdmission's).
	Admission *knativeadmission.Validator
	// Render renders the objects of a deployment (default Objects).
	Render func(ObjectSpec, deployconfig.Deployment) []*unstructured.Unstructured
}

// ObjectSpec is what Objects renders from: the deployment's identity and where it goes.
type ObjectSpec struct {
	ExecutionID    string
	Namespace      string
	SimulatorImage string
	RouterImage    string
}

// DeploymentLabel labels every Service of a deployment with its execution id: Cleanup deletes by
// it (a Service created but not yet recorded when the deployer died is found), and Deploy adopts
// an existing Service of the same name only when it carries this deployment's id.
const DeploymentLabel = "lensfn.dev/deployment"

// serviceName is the Service of one role (and replica index, i >= 0) of a deployment. It keeps
// the whole execution id (a UUID is 32 hex digits without its dashes), so two deployments never
// share a name; a longer id is replaced by 32 hex digits of its SHA-256. The longest name,
// lens-<32>-prefill-31, is 48 characters: under Kubernetes' 63 even with the "-00001" of its
// Revision and the "-private" of that Revision's Kubernetes Service (TestObjects checks 63 and
// Knative's own validation).
func serviceName(executionID, role string, i int) string {
	short := strings.ReplaceAll(executionID, "-", "")
	if len(short) > 32 {
		sum := sha256.Sum256([]byte(executionID))
		short = hex.EncodeToString(sum[:16])
	}
	if i < 0 {
		return "lens-" + short + "-" + role
	}
	return "lens-" + short + "-" + role + "-" + strconv.Itoa(i)
}

func clusterURL(name, ns string) string { return "http://" + name + "." + ns + ".svc.cluster.local" }

// Objects renders every Knative Service the knative provider creates for cfg, replicas first
// and the router last. It is pure; Deploy checks each with Knative's own admission code before
// it sends any.
func Objects(spec ObjectSpec, cfg deployconfig.Deployment) []*unstructured.Unstructured {
	c := cfg.Content
	simImage := spec.SimulatorImage
	if simImage == "" {
		simImage = DefaultSimulatorImage
	}
	if c.Runtime != nil && c.Runtime.Image != "" {
		simImage = c.Runtime.Image
	}
	routerImage := spec.RouterImage
	if routerImage == "" {
		routerImage = DefaultRouterImage
	}
	args := c.ReplicaArgs()
	profile := cfg.Profile()
	if cfg.ProviderRef == deployconfig.ProviderBaselineVLLM && c.Decode.Replicas > 1 {
		profile = deployconfig.ProfileRandom
	}
	var objs []*unstructured.Unstructured
	var decode, prefill []string
	add := func(role string, i int) {
		name := serviceName(spec.ExecutionID, role, i)
		objs = append(objs, service(spec, name, role, simImage, args, 8000))
		if role == "prefill" {
			prefill = append(prefill, clusterURL(name, spec.Namespace))
		} else {
			decode = append(decode, clusterURL(name, spec.Namespace))
		}
	}
	for i := range c.Decode.Replicas {
		add("decode", i)
	}
	if c.Prefill != nil {
		for i := range c.Prefill.Replicas {
			add("prefill", i)
		}
	}
	if profile != "" {
		rargs := []string{"--port", "8080", "--profile", profile, "--block-size", strconv.Itoa(c.BlockSize())}
		if profile == deployconfig.ProfilePD {
			rargs = append(rargs, "--prefill-replicas", strings.Join(prefill, ","), "--decode-replicas", strings.Join(decode, ","))
		} else {
			rargs = append(rargs, "--replicas", strings.Join(decode, ","))
		}
		objs = append(objs, service(spec, serviceName(spec.ExecutionID, "router", -1), "router", routerImage, rargs, 8080))
	}
	return objs
}

func service(spec ObjectSpec, name, role, image string, args []string, port int64) *unstructured.Unstructured {
	argList := make([]any, len(args))
	for i, a := range args {
		argList[i] = a
	}
	if role != "router" {
		argList = append(argList, "--port", strconv.FormatInt(port, 10))
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.knative.dev/v1",
		"kind":       "Service",
		"metadata": map[string]any{
			"name":      name,
			"namespace": spec.Namespace,
			"labels": map[string]any{
				"app.kubernetes.io/part-of":         "lensfn",
				"app.kubernetes.io/managed-by":      "lensfn-deployer",
				DeploymentLabel:                     spec.ExecutionID,
				"lensfn.dev/role":                   role,
				"networking.knative.dev/visibility": "cluster-local",
			},
		},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{
					"annotations": map[string]any{
						"autoscaling.knative.dev/min-scale":     "1",
						"autoscaling.knative.dev/max-scale":     "1",
						"autoscaling.knative.dev/initial-scale": "1",
					},
				},
				"spec": map[string]any{
					"containerConcurrency": int64(0),
					"timeoutSeconds":       int64(600),
					"containers": []any{map[string]any{
						"name":  role,
						"image": image,
						"args":  argList,
						"ports": []any{map[string]any{"name": "http1", "containerPort": port}},
						"securityContext": map[string]any{
							"runAsNonRoot":             true,
							"allowPrivilegeEscalation": false,
							"capabilities":             map[string]any{"drop": []any{"ALL"}},
							"seccompProfile":           map[string]any{"type": "RuntimeDefault"},
						},
						"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/health", "port": port}, "periodSeconds": int64(2)},
					}},
				},
			},
		},
	}}
}

func (k *Provider) client(ctx context.Context, d *deployer.Deployment) (dynamic.Interface, string, error) {
	session, err := k.Inventory.Session(ctx, d.ClusterSessionID)
	if err != nil {
		return nil, "", err
	}
	raw, err := k.Inventory.ClusterKubeconfig(ctx, session.ClusterID)
	if err != nil {
		return nil, "", err
	}
	// inventory-api refuses such a kubeconfig at registration; this check is for clusters
	// registered before it did, and for whatever else writes the store.
	creds, err := kubeconfig.Parse([]byte(raw))
	if err != nil {
		return nil, "", fmt.Errorf("cluster %s's kubeconfig is refused, so nothing was sent to the cluster "+
			"(register the cluster again with inline credentials only): %w", session.ClusterName, err)
	}
	// The server passes the endpoint policy here too (a record from before the check, or one
	// written to the store directly), and every connection dials through it (RESTConfig).
	if err := k.Inventory.CheckKubeconfigServer(ctx, creds); err != nil {
		return nil, "", fmt.Errorf("cluster %s's kubeconfig is refused, so nothing was sent to the cluster: %w", session.ClusterName, err)
	}
	ns := session.Namespace
	if ns == "" {
		ns = "default"
	}
	newClient := k.NewClient
	if newClient == nil {
		newClient = func(rc *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(rc) }
	}
	c, err := newClient(RESTConfig(creds, k.Inventory.Endpoints))
	return c, ns, err
}

// RESTConfig is the client configuration of creds and nothing else: no exec or auth-provider
// plugin, no file, no proxy of the kubeconfig's choosing (clientcmd would honour all of them).
// Every connection dials through policy (nil: egress's default deny), so a server name that
// resolves to a refused address later is refused too.
func RESTConfig(creds kubeconfig.Credentials, policy *egress.Policy) *rest.Config {
	return &rest.Config{
		Host:        creds.Server,
		Dial:        policy.DialContext,
		Proxy:       func(*http.Request) (*url.URL, error) { return nil, nil },
		BearerToken: creds.Token,
		TLSClientConfig: rest.TLSClientConfig{ServerName: creds.TLSServerName, Insecure: creds.Insecure,
			CAData: creds.CAData, CertData: creds.CertData, KeyData: creds.KeyData},
		Timeout: 30 * time.Second,
	}
}

// ErrLocalOnly is why the knative provider refuses precise-prefix-cache-routing: its router
// follows the replicas' KV-cache events over ZMQ (replicas started with --enable-kvcache and
// --zmq-endpoint, topics naming podIP:8000), and a Knative Service exposes one HTTP port and
// is addressed by its Service URL, so the router would receive no event it could match and
// silently route on load alone.
var ErrLocalOnly = errors.New("is supported by the local provider only (deploy it on a local cluster session): " +
	"a Knative Service exposes one HTTP port, so the router cannot receive the replicas' ZMQ KV-cache events")

// Deploy creates the Services, records each one, and waits for every Ready condition.
func (k *Provider) Deploy(ctx context.Context, d *deployer.Deployment, cfg deployconfig.Deployment, save func(context.Context) error) error {
	if cfg.ProviderRef == deployconfig.ProviderPrecisePrefix || cfg.Profile() == deployconfig.ProfilePrecisePrefix {
		return fmt.Errorf("%s (router profile %s) %w", cfg.ProviderRef, cfg.Profile(), ErrLocalOnly)
	}
	c, ns, err := k.client(ctx, d)
	if err != nil {
		return err
	}
	render := k.Render
	if render == nil {
		render = Objects
	}
	objs := render(ObjectSpec{ExecutionID: d.ExecutionID, Namespace: ns, SimulatorImage: k.SimulatorImage, RouterImage: k.RouterImage}, cfg)
	if err := k.admit(ctx, objs); err != nil {
		return err
	}
	// The namespace is saved before the first Create: a record with a namespace may have Services
	// in it that it does not list (the deployer died between a Create and its save), and Cleanup
	// finds those by label.
	d.Namespace = ns
	if err := save(ctx); err != nil {
		return err
	}
	for _, o := range objs {
		_, err := c.Resource(ServiceGVR).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = k.adopt(ctx, c, ns, o.GetName(), d.ExecutionID)
		} else if err != nil {
			err = fmt.Errorf("create Service %s/%s: %w", ns, o.GetName(), err)
		}
		if err != nil {
			return err
		}
		d.Objects = append(d.Objects, deployer.Object{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: ns, Name: o.GetName(),
			Role: o.GetLabels()["lensfn.dev/role"]})
		if err := save(ctx); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, k.ReadyTimeout)
	defer cancel()
	poll := k.Poll
	if poll == 0 {
		poll = time.Second
	}
	urls := map[string]string{}
	for _, o := range d.Objects {
		url, err := k.waitReady(ctx, c, o, poll)
		if err != nil {
			return err
		}
		urls[o.Name] = url
	}
	d.ReplicaEndpoints = nil
	var router string
	for _, o := range d.Objects {
		if o.Role == "router" {
			router = urls[o.Name]
		} else {
			d.ReplicaEndpoints = append(d.ReplicaEndpoints, urls[o.Name])
		}
	}
	switch {
	case router != "" && cfg.ProviderRef == deployconfig.ProviderBaselineVLLM:
		d.Endpoint = router + "/balanced/v1"
	case router != "":
		d.Endpoint, d.BaselineURL = router+"/v1", router+"/balanced/v1"
	default:
		d.Endpoint = d.ReplicaEndpoints[0] + "/v1"
	}
	return nil
}

// adopt takes over an existing Service of a deployment's name only when it is that deployment's
// (one a dead worker created before it could record it); anything else is left alone.
func (k *Provider) adopt(ctx context.Context, c dynamic.Interface, ns, name, executionID string) error {
	existing, err := c.Resource(ServiceGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the Service %s/%s already exists and cannot be read: %w", ns, name, err)
	}
	if owner := existing.GetLabels()[DeploymentLabel]; owner != executionID {
		return fmt.Errorf("the Service %s/%s already exists and is not this deployment's (its %s label is %q), so it was left alone "+
			"and the deployment stopped; delete or rename that Service", ns, name, DeploymentLabel, owner)
	}
	return nil
}

// admit checks every object the way the cluster's admission would, all of them before the first
// is sent: a deployment Knative would refuse part-way creates nothing.
func (k *Provider) admit(ctx context.Context, objs []*unstructured.Unstructured) error {
	v := k.Admission
	if v == nil {
		var err error
		if v, err = NewAdmission(); err != nil {
			return err
		}
	}
	for _, o := range objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			return fmt.Errorf("the Service %s: %w", o.GetName(), err)
		}
		if _, err := v.Validate(ctx, raw); err != nil {
			var r *knativeadmission.Rejection
			if errors.As(err, &r) {
				return fmt.Errorf("the Knative admission checks would not admit %s, so nothing was created: %s", r.Object, strings.Join(r.Findings, "; "))
			}
			return err
		}
	}
	return nil
}

// waitReady polls the Service until its Ready condition is True and returns its status.url.
func (k *Provider) waitReady(ctx context.Context, c dynamic.Interface, o deployer.Object, poll time.Duration) (string, error) {
	last := "not observed yet"
	for {
		u, err := c.Resource(ServiceGVR).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, raw := range conds {
				cond, _ := raw.(map[string]any)
				if cond["type"] != "Ready" {
					continue
				}
				switch cond["status"] {
				case "True":
					url, _, _ := unstructured.NestedString(u.Object, "status", "url")
					if url == "" {
						url = clusterURL(o.Name, o.Namespace)
					}
					return url, nil
				case "False":
					return "", fmt.Errorf("the Service %s/%s is not ready: %v %v", o.Namespace, o.Name, cond["reason"], cond["message"])
				}
				last = fmt.Sprintf("Ready %v: %v", cond["status"], cond["message"])
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", fmt.Errorf("the Service %s/%s not ready within %s: %s", o.Namespace, o.Name, k.ReadyTimeout, last)
			}
			return "", ctx.Err()
		case <-time.After(poll):
		}
	}
}

// Cleanup deletes every recorded Service and every Service in the deployment's namespace that
// carries its DeploymentLabel, so a Service created but not yet recorded is deleted too (one
// already gone counts as deleted). A record with neither objects nor a namespace never created
// anything (Deploy saves the namespace before its first Create).
func (k *Provider) Cleanup(ctx context.Context, d *deployer.Deployment) error {
	if len(d.Objects) == 0 && d.Namespace == "" {
		return nil
	}
	c, ns, err := k.client(ctx, d)
	if err != nil {
		return err
	}
	if d.Namespace != "" {
		ns = d.Namespace
	}
	var left []deployer.Object
	var errs []error
	deleted := map[string]bool{}
	remove := func(o deployer.Object) {
		err := c.Resource(ServiceGVR).Namespace(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			left = append(left, o)
			errs = append(errs, fmt.Errorf("delete Service %s/%s: %w", o.Namespace, o.Name, err))
			return
		}
		deleted[o.Namespace+"/"+o.Name] = true
	}
	for _, o := range d.Objects {
		remove(o)
	}
	labelled, err := c.Resource(ServiceGVR).Namespace(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{DeploymentLabel: d.ExecutionID}.String()})
	if err != nil {
		errs = append(errs, fmt.Errorf("list the Services labelled %s=%s in %s: %w", DeploymentLabel, d.ExecutionID, ns, err))
	} else {
		for _, u := range labelled.Items {
			if !deleted[ns+"/"+u.GetName()] {
				remove(deployer.Object{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: ns, Name: u.GetName(),
					Role: u.GetLabels()["lensfn.dev/role"]})
			}
		}
	}
	d.Objects = left
	return errors.Join(errs...)
}
