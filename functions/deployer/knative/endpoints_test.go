package knative_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/functions/deployer/knative"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/egress"
	"github.com/lensfn/lensfn/runtime/inventory"
	kubeconfigpkg "github.com/lensfn/lensfn/runtime/kubeconfig"
	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
)

// TestKnativeDialsTheClusterThroughTheEndpointPolicy: a cluster whose kubeconfig server the
// endpoint policy refuses gets nothing from the deployer, neither when its stored kubeconfig
// names a refused address (a record from before the check) nor when its server is refused only
// at the dial (the policy changed after registration).
func TestKnativeDialsTheClusterThroughTheEndpointPolicy(t *testing.T) {
	var hits atomic.Int32
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer server.Close()
	ctx := context.Background()
	cfg, err := deployconfig.Parse("optimized-baseline", []byte(`{"model":{"name":"m"},"decode":{"replicas":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t)
	cluster, session, err := repo.CreateCluster(ctx, inventory.ClusterSpec{Name: "c", Kind: inventory.ClusterKubernetes,
		Namespace: "eval", Kubeconfig: kubeconfigtest.Token(server.URL, "secret-token-xyz")})
	if err != nil {
		t.Fatal(err)
	}
	deploy := func(repo *inventory.Repo) error {
		k := &knative.Provider{Inventory: repo, ReadyTimeout: time.Second, Poll: 10 * time.Millisecond}
		return k.Deploy(ctx, &deployer.Deployment{ExecutionID: inventory.NewID(), ClusterSessionID: session.ID}, cfg,
			func(context.Context) error { return nil })
	}
	// The policy now denies loopback: the stored server is refused before any client is built.
	rules, _ := egress.ParseRules("", "127.0.0.0/8")
	denying := *repo
	denying.Endpoints = egress.New(rules)
	if err := deploy(&denying); err == nil || !strings.Contains(err.Error(), "not allowed") || strings.Contains(err.Error(), "secret-token-xyz") {
		t.Fatalf("deploy to a denied server: %v", err)
	}
	// A metadata address stored underneath the repo is refused by the default policy alone.
	storeKubeconfigUnchecked(t, repo, cluster.ID, kubeconfigtest.Token("https://169.254.169.254:6443", "secret-token-xyz"))
	if err := deploy(repo); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("deploy to a metadata address: %v", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the cluster's server got %d requests", hits.Load())
	}
	// The dial itself goes through the policy, whatever resolved the name.
	rc := knative.RESTConfig(knativeCreds(server.URL), egress.New(rules))
	if _, err := rc.Dial(ctx, "tcp", strings.TrimPrefix(server.URL, "https://")); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("RESTConfig's dial to a denied address: %v", err)
	}
}

func knativeCreds(server string) kubeconfigpkg.Credentials {
	return kubeconfigpkg.Credentials{Server: server, Token: "t"}
}
