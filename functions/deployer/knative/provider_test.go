package knative_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/functions/deployer/knative"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/knativeadmission"
	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
	"github.com/lensfn/lensfn/runtime/secret"
	"github.com/lensfn/lensfn/runtime/state"
)

// newRepo is an inventory on a fresh store: where the provider reads a session's kubeconfig.
func newRepo(t *testing.T) *inventory.Repo {
	key := secret.NewKey()
	deps := fntest.Deps(t, "deployer", fntest.Env(t, map[string]string{"LENS_SECRET_KEY": key}))
	sealer, err := secret.FromEnv(key)
	if err != nil {
		t.Fatal(err)
	}
	return &inventory.Repo{Store: deps.Store, Sealer: sealer}
}

// kubeconfig is the inline kubeconfig the tests' clusters hold; its token must never show.
var kubeconfig = kubeconfigtest.Token("https://k8s.example:6443", "secret-token-xyz")

// The knative provider creates one Service per replica and a router Service through the
// dynamic client, with the kubeconfig the session's cluster holds, waits for Ready and deletes
// them all on cleanup.
func TestKnativeDeployAndCleanup(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	_, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "k8s", Kind: inventory.ClusterKubernetes, Namespace: "eval", Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schemaGVR]string{knative.ServiceGVR: "ServiceList"})
	ready := true
	client.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		status := "False"
		if ready {
			status = "True"
		}
		u.Object["status"] = map[string]any{"url": "http://" + u.GetName() + ".eval.example.com",
			"conditions": []any{map[string]any{"type": "Ready", "status": status, "reason": "RevisionFailed", "message": "image pull"}}}
		return false, nil, nil
	})
	var got *rest.Config
	k := &knative.Provider{Inventory: repo, ReadyTimeout: 5 * time.Second, Poll: 10 * time.Millisecond,
		NewClient: func(rc *rest.Config) (dynamic.Interface, error) { got = rc; return client, nil }}
	cfg, err := deployconfig.Parse("pd-disaggregation", []byte(`{"model":{"name":"m"},"decode":{"replicas":2},"prefill":{"replicas":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}
	saves := 0 // the namespace, then each Service
	if err := k.Deploy(ctx, d, cfg, func(context.Context) error { saves++; return nil }); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Host != "https://k8s.example:6443" || got.BearerToken != "secret-token-xyz" || saves != 5 || len(d.Objects) != 4 || len(d.ReplicaEndpoints) != 3 ||
		!strings.HasSuffix(d.Endpoint, "-router.eval.example.com/v1") || d.Namespace != "eval" {
		t.Fatalf("deployment = %+v (saves %d)", d, saves)
	}
	list, err := client.Resource(knative.ServiceGVR).Namespace("eval").List(ctx, listOptions)
	if err != nil || len(list.Items) != 4 {
		t.Fatalf("services: %v %v", list, err)
	}
	router, _ := client.Resource(knative.ServiceGVR).Namespace("eval").Get(ctx, d.Objects[3].Name, getOptions)
	args, _, _ := unstructured.NestedSlice(router.Object, "spec", "template", "spec", "containers")
	raw, _ := json.Marshal(args)
	if !strings.Contains(string(raw), `"--profile","pd","--block-size","16","--prefill-replicas"`) || !strings.Contains(string(raw), ".eval.svc.cluster.local") {
		t.Fatalf("router container: %s", raw)
	}
	if err := k.Cleanup(ctx, d); err != nil || len(d.Objects) != 0 {
		t.Fatalf("cleanup: %v %+v", err, d.Objects)
	}
	if list, _ := client.Resource(knative.ServiceGVR).Namespace("eval").List(ctx, listOptions); len(list.Items) != 0 {
		t.Fatalf("left after cleanup: %d", len(list.Items))
	}

	// A Service whose Ready condition is False fails the deployment with Knative's reason; the
	// Services created so far are recorded for the cleanup.
	ready = false
	d = &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}
	err = k.Deploy(ctx, d, cfg, func(context.Context) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "RevisionFailed") || len(d.Objects) != 4 || strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("deploy with a failing revision: %v, objects %d", err, len(d.Objects))
	}
}

// Every object Objects renders is a Knative Service with the restricted security context and
// the configuration's replicas; baseline-vllm with one replica has no router.
func TestObjects(t *testing.T) {
	admission, err := knative.NewAdmission()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider, content string
		services          int
		router            bool
	}{
		{"baseline-vllm", `{"model":{"name":"m"}}`, 1, false},
		{"baseline-vllm", `{"model":{"name":"m"},"decode":{"replicas":3}}`, 4, true},
		{"optimized-baseline", `{"model":{"name":"m"},"decode":{"replicas":2}}`, 3, true},
		{"optimized-baseline", `{"model":{"name":"m"},"decode":{"replicas":2},"runtime":{"image":"vllm/vllm-openai:v0.9"}}`, 3, true},
		{"pd-disaggregation", `{"model":{"name":"m"},"decode":{"replicas":32},"prefill":{"replicas":32}}`, 65, true}, // the longest names
	} {
		cfg, err := deployconfig.Parse(tc.provider, []byte(tc.content))
		if err != nil {
			t.Fatal(err)
		}
		objs := knative.Objects(knative.ObjectSpec{ExecutionID: "0b7c4f0e-1111-2222-3333-444455556666", Namespace: "eval"}, cfg)
		if len(objs) != tc.services || (objs[len(objs)-1].GetLabels()["lensfn.dev/role"] == "router") != tc.router {
			t.Fatalf("%s: %d objects", tc.provider, len(objs))
		}
		for _, o := range objs {
			raw, _ := o.MarshalJSON()
			if _, err := admission.Validate(context.Background(), raw); err != nil {
				t.Fatalf("%s: %v", tc.provider, err)
			}
			// Knative names the first Revision <name>-00001 and its private Kubernetes Service
			// <revision>-private: both must fit in 63 characters too.
			if o.GetKind() != "Service" || o.GetAPIVersion() != "serving.knative.dev/v1" || len(o.GetName()+"-00001-private") > 63 {
				t.Fatalf("object %s %s %s", o.GetAPIVersion(), o.GetKind(), o.GetName())
			}
			image, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if strings.Contains(tc.content, "vllm/vllm-openai") && o.GetLabels()["lensfn.dev/role"] == "decode" &&
				image[0].(map[string]any)["image"] != "vllm/vllm-openai:v0.9" {
				t.Fatalf("runtime.image not used: %v", image)
			}
		}
	}
}

type schemaGVR = schema.GroupVersionResource

var (
	listOptions = metav1.ListOptions{}
	getOptions  = metav1.GetOptions{}
)

// An object Knative's admission would refuse is refused before any API call: a configuration
// whose runtime.image is not an image reference, and a rendered Service with a fieldRef env
// (gated by kubernetes.podspec-fieldref, which deploy/knative does not declare). The fake
// dynamic client sees no action at all, so no Service of the deployment was created.
func TestKnativeRefusesWhatKnativeWouldNotAdmit(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	_, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "k8s", Kind: inventory.ClusterKubernetes, Namespace: "eval", Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	fieldRef := func(spec knative.ObjectSpec, cfg deployconfig.Deployment) []*unstructured.Unstructured {
		objs := knative.Objects(spec, cfg)
		containers, _, _ := unstructured.NestedSlice(objs[len(objs)-1].Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["env"] = []any{map[string]any{"name": "POD_NAME",
			"valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}}
		_ = unstructured.SetNestedSlice(objs[len(objs)-1].Object, containers, "spec", "template", "spec", "containers")
		return objs
	}
	for _, tc := range []struct {
		name, content string
		render        func(knative.ObjectSpec, deployconfig.Deployment) []*unstructured.Unstructured
		want          string
	}{
		{"image", `{"model":{"name":"m"},"decode":{"replicas":2},"runtime":{"image":"Not An Image!"}}`, nil, "Failed to parse image reference"},
		{"fieldRef", `{"model":{"name":"m"},"decode":{"replicas":2}}`, fieldRef, "must not set the field(s): spec.template.spec.containers[0].env[0].valueFrom.fieldRef"},
	} {
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schemaGVR]string{knative.ServiceGVR: "ServiceList"})
		k := &knative.Provider{Inventory: repo, ReadyTimeout: time.Second, Poll: 10 * time.Millisecond, Render: tc.render,
			NewClient: func(*rest.Config) (dynamic.Interface, error) { return client, nil }}
		cfg, err := deployconfig.Parse("optimized-baseline", []byte(tc.content))
		if err != nil {
			t.Fatal(err)
		}
		d := &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}
		err = k.Deploy(ctx, d, cfg, func(context.Context) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was created") {
			t.Fatalf("%s: deploy = %v, want Knative's refusal %q", tc.name, err, tc.want)
		}
		if actions := client.Actions(); len(actions) != 0 || len(d.Objects) != 0 {
			t.Fatalf("%s: %d API calls and %d objects recorded, want none", tc.name, len(actions), len(d.Objects))
		}
	}
}

// The knative provider validates under exactly the knative-serving configuration deploy/knative
// declares.
func TestServingConfigIsTheDeclaredOne(t *testing.T) {
	declared, err := knativeadmission.ServingConfigIn("../../../deploy/knative")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(declared, knative.ServingConfig) {
		t.Fatalf("deploy/knative declares %v, the deployer validates under %v", declared, knative.ServingConfig)
	}
}

// A cluster stored with a kubeconfig inventory-api now refuses (registered before it did) fails
// the deployment before anything reads the kubeconfig the way client-go would: its exec plugin,
// which would create a file, never runs, and no request reaches its server. Each refused
// feature fails the same way, naming the field and not the kubeconfig's content.
// storeKubeconfigUnchecked replaces a cluster's stored kubeconfig with raw, sealed as the
// repo seals it, without the repo's checks (a record from before they existed).
func storeKubeconfigUnchecked(t *testing.T, repo *inventory.Repo, clusterID, raw string) {
	t.Helper()
	ctx := context.Background()
	rec, err := repo.Store.Get(ctx, inventory.KindCluster, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Doc, &doc); err != nil {
		t.Fatal(err)
	}
	doc["sealed_kubeconfig"] = repo.Sealer.Seal(raw, inventory.KindCluster+":"+clusterID)
	if rec.Doc, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Store.Update(ctx, rec, state.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := repo.ClusterKubeconfig(ctx, clusterID); err != nil || got != raw {
		t.Fatalf("the replaced kubeconfig does not read back: %v", err)
	}
}

func TestKnativeRefusesAStoredKubeconfigWithoutRunningIt(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the deployer sent %s %s to the kubeconfig's server (Authorization %q)", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusForbidden)
	}))
	defer server.Close()
	marker := filepath.Join(t.TempDir(), "exec-plugin-ran")
	if !strings.HasPrefix(server.URL, "https://") {
		t.Fatal(server.URL) // client-go reads no credentials at all for an http:// server
	}
	cfg, err := deployconfig.Parse("optimized-baseline", []byte(`{"model":{"name":"m"},"decode":{"replicas":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range kubeconfigtest.Refused(server.URL, marker) {
		t.Run(tc.Name, func(t *testing.T) {
			// A record stored before registration refused such kubeconfigs: a valid cluster
			// whose stored kubeconfig is then replaced underneath the repo.
			cluster, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: fmt.Sprintf("old-%d", i), Kind: inventory.ClusterKubernetes,
				Namespace: "eval", Kubeconfig: kubeconfig})
			if err != nil {
				t.Fatal(err)
			}
			storeKubeconfigUnchecked(t, repo, cluster.ID, tc.Kubeconfig)
			k := &knative.Provider{Inventory: repo, ReadyTimeout: time.Second, Poll: 10 * time.Millisecond} // client-go's own client
			d := &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}
			err = k.Deploy(ctx, d, cfg, func(context.Context) error { return nil })
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("the exec plugin ran: %s exists (%v)", marker, err)
			}
			if err == nil || !strings.Contains(err.Error(), "kubeconfig is refused") || !strings.Contains(err.Error(), tc.Field) ||
				strings.Contains(err.Error(), kubeconfigtest.RefusedToken) || strings.Contains(err.Error(), marker) {
				t.Fatalf("deploy = %v, want a refusal naming %q", err, tc.Field)
			}
			if len(d.Objects) != 0 {
				t.Fatalf("objects recorded: %+v", d.Objects)
			}
		})
	}
}

// precise-prefix-cache-routing fails on Knative before anything is sent, saying it is for the
// local provider: its router would get no KV-cache event there and route on load alone.
func TestKnativeRefusesPrecisePrefixCacheRouting(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	_, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "k8s", Kind: inventory.ClusterKubernetes, Namespace: "eval", Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schemaGVR]string{knative.ServiceGVR: "ServiceList"})
	k := &knative.Provider{Inventory: repo, ReadyTimeout: time.Second, Poll: 10 * time.Millisecond,
		NewClient: func(*rest.Config) (dynamic.Interface, error) { return client, nil }}
	cfg, err := deployconfig.Parse(deployconfig.ProviderPrecisePrefix, []byte(`{"model":{"name":"m"},"decode":{"replicas":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}
	err = k.Deploy(ctx, d, cfg, func(context.Context) error { return nil })
	if !errors.Is(err, knative.ErrLocalOnly) || !strings.Contains(err.Error(), "precise-prefix-cache-routing (router profile precise-prefix) is supported by the local provider only") {
		t.Fatalf("deploy = %v, want the local-provider-only refusal", err)
	}
	if len(client.Actions()) != 0 || len(d.Objects) != 0 || d.Namespace != "" {
		t.Fatalf("%d API calls, objects %+v, namespace %q: want nothing", len(client.Actions()), d.Objects, d.Namespace)
	}
}

// newServices is a fake cluster whose Services turn Ready as soon as they are created.
func newServices() *dynamicfake.FakeDynamicClient {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schemaGVR]string{knative.ServiceGVR: "ServiceList"})
	client.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
		return false, nil, nil
	})
	return client
}

func serviceNames(t *testing.T, client dynamic.Interface) []string {
	t.Helper()
	list, err := client.Resource(knative.ServiceGVR).Namespace("eval").List(context.Background(), listOptions)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	return names
}

// A deployer that dies between creating a Service and saving its record leaves a record that
// lists no Service: Cleanup of that record still deletes it (by the deployment's label), and a
// new attempt adopts it, since it is this deployment's.
func TestKnativeCleansUpAServiceCreatedButNotRecorded(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	_, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "k8s", Kind: inventory.ClusterKubernetes, Namespace: "eval", Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	client := newServices()
	k := &knative.Provider{Inventory: repo, ReadyTimeout: 5 * time.Second, Poll: 10 * time.Millisecond,
		NewClient: func(*rest.Config) (dynamic.Interface, error) { return client, nil }}
	cfg, err := deployconfig.Parse("optimized-baseline", []byte(`{"model":{"name":"m"},"decode":{"replicas":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	// crash saves what the store would hold: every save up to the one after the first Create,
	// which never happens.
	crash := func(stored *deployer.Deployment, d *deployer.Deployment) func(context.Context) error {
		return func(context.Context) error {
			if len(d.Objects) > 0 {
				return errors.New("the deployer died")
			}
			*stored = *d
			return nil
		}
	}
	id := inventory.NewID()
	var stored deployer.Deployment
	d := &deployer.Deployment{ExecutionID: id, ClusterSessionID: session.ID}
	if err := k.Deploy(ctx, d, cfg, crash(&stored, d)); err == nil {
		t.Fatal("deploy survived its crash")
	}
	if names := serviceNames(t, client); len(names) != 1 || len(stored.Objects) != 0 || stored.Namespace != "eval" {
		t.Fatalf("after the crash: Services %v, stored record %+v", names, stored)
	}
	if err := k.Cleanup(ctx, &stored); err != nil {
		t.Fatal(err)
	}
	if names := serviceNames(t, client); len(names) != 0 {
		t.Fatalf("Cleanup of the stored record left %v", names)
	}

	// The same crash, then the next worker deploys again: it adopts the Service and cleans up all.
	stored = deployer.Deployment{}
	d = &deployer.Deployment{ExecutionID: id, ClusterSessionID: session.ID}
	_ = k.Deploy(ctx, d, cfg, crash(&stored, d))
	again := &deployer.Deployment{ExecutionID: id, ClusterSessionID: session.ID}
	if err := k.Deploy(ctx, again, cfg, func(context.Context) error { return nil }); err != nil || len(again.Objects) != 3 {
		t.Fatalf("redeploy: %v, objects %+v", err, again.Objects)
	}
	if err := k.Cleanup(ctx, again); err != nil || len(serviceNames(t, client)) != 0 {
		t.Fatalf("cleanup: %v, left %v", err, serviceNames(t, client))
	}
}

// A Service that has a deployment's name but not its label (another deployment's, or nobody's)
// is not adopted: the deployment fails saying so, and neither it nor its cleanup touches that
// Service.
func TestKnativeDoesNotAdoptAForeignService(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	_, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "k8s", Kind: inventory.ClusterKubernetes, Namespace: "eval", Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := deployconfig.Parse("optimized-baseline", []byte(`{"model":{"name":"m"},"decode":{"replicas":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{inventory.NewID(), ""} {
		client := newServices()
		k := &knative.Provider{Inventory: repo, ReadyTimeout: 5 * time.Second, Poll: 10 * time.Millisecond,
			NewClient: func(*rest.Config) (dynamic.Interface, error) { return client, nil }}
		d := &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}
		foreign := knative.Objects(knative.ObjectSpec{ExecutionID: d.ExecutionID, Namespace: "eval"}, cfg)[1] // decode-1
		foreign.SetLabels(map[string]string{knative.DeploymentLabel: owner, "team": "someone-else"})
		if _, err := client.Resource(knative.ServiceGVR).Namespace("eval").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := k.Deploy(ctx, d, cfg, func(context.Context) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "already exists and is not this deployment's") || !strings.Contains(err.Error(), foreign.GetName()) {
			t.Fatalf("owner %q: deploy = %v, want a refusal to adopt", owner, err)
		}
		for _, o := range d.Objects {
			if o.Name == foreign.GetName() {
				t.Fatalf("owner %q: the foreign Service was recorded: %+v", owner, d.Objects)
			}
		}
		if err := k.Cleanup(ctx, d); err != nil {
			t.Fatal(err)
		}
		got, err := client.Resource(knative.ServiceGVR).Namespace("eval").Get(ctx, foreign.GetName(), getOptions)
		if err != nil || got.GetLabels()["team"] != "someone-else" || len(serviceNames(t, client)) != 1 {
			t.Fatalf("owner %q: the foreign Service after cleanup: %v, %v; Services %v", owner, got, err, serviceNames(t, client))
		}
	}
}

// Two deployments whose ids share their first characters get different Service names.
func TestServiceNamesKeepTheWholeID(t *testing.T) {
	cfg, err := deployconfig.Parse("optimized-baseline", []byte(`{"model":{"name":"m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := knative.Objects(knative.ObjectSpec{ExecutionID: "0b7c4f0e-1111-2222-3333-444455556666", Namespace: "eval"}, cfg)
	b := knative.Objects(knative.ObjectSpec{ExecutionID: "0b7c4f0e-1111-2222-3333-444455557777", Namespace: "eval"}, cfg)
	for i := range a {
		if a[i].GetName() == b[i].GetName() {
			t.Fatalf("both deployments name a Service %s", a[i].GetName())
		}
	}
}
