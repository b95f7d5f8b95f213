package inventory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/inventory"
	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/secret"
)

func newRepo(t *testing.T) *inventory.Repo {
	t.Helper()
	sealer, err := secret.FromEnv(secret.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return &inventory.Repo{Store: fntest.Deps(t, "inventory-test", fntest.Env(t, nil)).Store, Sealer: sealer}
}

func wantCode(t *testing.T, err error, code problem.Code) {
	t.Helper()
	if problem.CodeOf(err) != code {
		t.Fatalf("got %v, want a %s problem", err, code)
	}
}

func localSession(t *testing.T, r *inventory.Repo) inventory.Session {
	t.Helper()
	_, s, err := r.CreateCluster(context.Background(), inventory.ClusterSpec{Name: "local-" + inventory.NewID()[:8], Kind: inventory.ClusterLocal})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func putExecution(t *testing.T, r *inventory.Repo, session, apiKey string) inventory.Execution {
	t.Helper()
	e := inventory.Execution{ID: inventory.NewID(), ClusterSessionID: session, Name: "sim", Model: "fake-model",
		Endpoint: "http://127.0.0.1:8000/v1", Ownership: inventory.OwnershipExistingEndpoint, Status: inventory.StatusReady}
	if err := r.PutExecution(context.Background(), e, apiKey); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExecutionRoundTripKeepsTheKeySealed(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s := localSession(t, r)
	e := putExecution(t, r, s.ID, "sk-very-secret")

	got, err := r.Execution(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Endpoint != e.Endpoint || got.Model != "fake-model" || got.Status != "ready" || !got.HasAPIKey || got.CreatedAt.IsZero() {
		t.Fatalf("execution = %+v", got)
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), "sk-very-secret") || strings.Contains(string(raw), "sealed") {
		t.Fatalf("the client view leaks the key: %s", raw)
	}
	stored, err := r.Store.Get(ctx, inventory.KindExecution, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored.Doc), "sk-very-secret") {
		t.Fatal("the key is stored in plain text")
	}
	if key, err := r.ExecutionAPIKey(ctx, e.ID); err != nil || key != "sk-very-secret" {
		t.Fatalf("ExecutionAPIKey = %q, %v", key, err)
	}

	// Replacing keeps the key when none is given, and the creation time.
	e.Status = "deleting"
	if err := r.PutExecution(ctx, e, ""); err != nil {
		t.Fatal(err)
	}
	again, _ := r.Execution(ctx, e.ID)
	if again.Status != "deleting" || !again.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("after replace: %+v", again)
	}
	if key, _ := r.ExecutionAPIKey(ctx, e.ID); key != "sk-very-secret" {
		t.Fatalf("key after replace = %q", key)
	}

	_, err = r.Execution(ctx, "no-such-id")
	wantCode(t, err, problem.CodeNotFound)
	_, err = r.Execution(ctx, "bad id/with slash")
	wantCode(t, err, problem.CodeNotFound)
	if key, err := r.ExecutionAPIKey(ctx, putExecution(t, r, s.ID, "").ID); key != "" || err != nil {
		t.Fatalf("keyless execution: %q, %v", key, err)
	}
}

func TestPutExecutionWithoutSealerRefusesKeys(t *testing.T) {
	r := newRepo(t)
	r.Sealer = nil
	s := localSession(t, r)
	err := r.PutExecution(context.Background(), inventory.Execution{ID: inventory.NewID(), ClusterSessionID: s.ID, Model: "m",
		Endpoint: "http://127.0.0.1:1/v1", Ownership: inventory.OwnershipEvaluation}, "sk")
	wantCode(t, err, problem.CodeUnavailable)
}

func TestUsesBlockDeleteUntilReleased(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	e := putExecution(t, r, localSession(t, r).ID, "")
	if err := r.AcquireUse(ctx, e.ID, "run-1"); err != nil {
		t.Fatal(err)
	}
	if err := r.AcquireUse(ctx, e.ID, "run-1"); err != nil { // a redelivered event
		t.Fatal(err)
	}
	got, _ := r.Execution(ctx, e.ID)
	if got.ActiveUses != 1 {
		t.Fatalf("active uses = %d, want 1", got.ActiveUses)
	}
	if users, err := r.ExecutionUsers(ctx, e.ID); err != nil || !slices.Equal(users, []string{"run-1"}) {
		t.Fatalf("users %v %v, want run-1", users, err)
	}
	wantCode(t, r.DeleteExecution(ctx, e.ID), problem.CodeConflict)
	if err := r.ReleaseUse(ctx, e.ID, "run-1"); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteExecution(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	_, err := r.Execution(ctx, e.ID)
	wantCode(t, err, problem.CodeNotFound)
	_, err = r.ExecutionUsers(ctx, e.ID)
	wantCode(t, err, problem.CodeNotFound)
	if err := r.ReleaseUse(ctx, e.ID, "run-1"); err != nil {
		t.Fatalf("releasing on a deleted execution: %v", err)
	}
	wantCode(t, r.AcquireUse(ctx, e.ID, "run-2"), problem.CodeNotFound)
}

// Uses left behind by ended runs do not block a delete once HolderEnded says so; a holder not
// known to have ended, and a use taken while the delete looks, still do.
func TestDeleteDropsUsesOfEndedHolders(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	e := putExecution(t, r, localSession(t, r).ID, "")
	ended := map[string]bool{"run-cancelled": true, "run-failed": true}
	r.HolderEnded = func(_ context.Context, holder string) (bool, error) {
		if holder == "run-failed" {
			// a run takes its use while the delete is looking at the others
			if err := r.AcquireUse(ctx, e.ID, "run-new"); err != nil {
				t.Fatal(err)
			}
		}
		return ended[holder], nil
	}
	for _, id := range []string{"run-cancelled", "run-failed"} {
		if err := r.AcquireUse(ctx, e.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	err := r.DeleteExecution(ctx, e.ID)
	wantCode(t, err, problem.CodeConflict)
	if !strings.Contains(err.Error(), "run-new") {
		t.Fatalf("the 409 does not name the run that took its use meanwhile: %v", err)
	}
	if users, _ := r.ExecutionUsers(ctx, e.ID); !slices.Equal(users, []string{"run-new"}) {
		t.Fatalf("users after the delete = %v, want only run-new (the ended runs' uses dropped)", users)
	}
	ended["run-new"] = true
	if err := r.DeleteExecution(ctx, e.ID); err != nil {
		t.Fatalf("delete with only an ended run's use: %v", err)
	}
	_, err = r.Execution(ctx, e.ID)
	wantCode(t, err, problem.CodeNotFound)

	// An error from HolderEnded is the delete's, and nothing is dropped.
	e = putExecution(t, r, localSession(t, r).ID, "")
	if err := r.AcquireUse(ctx, e.ID, "run-cancelled"); err != nil {
		t.Fatal(err)
	}
	r.HolderEnded = func(context.Context, string) (bool, error) { return false, errors.New("store down") }
	if err := r.DeleteExecution(ctx, e.ID); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("delete with a failing HolderEnded = %v", err)
	}
	if users, _ := r.ExecutionUsers(ctx, e.ID); !slices.Equal(users, []string{"run-cancelled"}) {
		t.Fatalf("users = %v, want run-cancelled kept", users)
	}
}

func TestConcurrentAcquiresAreAllKept(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	e := putExecution(t, r, localSession(t, r).ID, "")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.AcquireUse(ctx, e.ID, "run-"+string(rune('a'+i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, _ := r.Execution(ctx, e.ID); got.ActiveUses != 8 {
		t.Fatalf("active uses = %d, want 8", got.ActiveUses)
	}
}

func TestClustersSessionsAndNames(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	c, s, err := r.CreateCluster(ctx, inventory.ClusterSpec{Name: "prod", Kind: inventory.ClusterKubernetes, Kubeconfig: kubeconfigtest.Token("https://127.0.0.1:6443", "test-token")})
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionID != s.ID || s.Status != inventory.SessionActive || !c.HasKubeconfig {
		t.Fatalf("cluster %+v session %+v", c, s)
	}
	if kc, err := r.ClusterKubeconfig(ctx, c.ID); err != nil || !strings.Contains(kc, "kind: Config") {
		t.Fatalf("kubeconfig = %q, %v", kc, err)
	}
	stored, _ := r.Store.Get(ctx, inventory.KindCluster, c.ID)
	if strings.Contains(string(stored.Doc), "kind: Config") {
		t.Fatal("kubeconfig stored in plain text")
	}
	_, _, err = r.CreateCluster(ctx, inventory.ClusterSpec{Name: "prod", Kind: inventory.ClusterLocal})
	wantCode(t, err, problem.CodeConflict)
	_, _, err = r.CreateCluster(ctx, inventory.ClusterSpec{Name: "x", Kind: inventory.ClusterKubernetes})
	wantCode(t, err, problem.CodeBadRequest)
	_, _, err = r.CreateCluster(ctx, inventory.ClusterSpec{Name: "x", Kind: inventory.ClusterLocal, Kubeconfig: "k"})
	wantCode(t, err, problem.CodeBadRequest)
	// Every kubeconfig runtime/kubeconfig refuses (an exec plugin, a token file...) is refused
	// here too, whoever calls, and nothing is stored under the name.
	for _, refused := range kubeconfigtest.Refused("https://127.0.0.1:6443", "marker") {
		_, _, err = r.CreateCluster(ctx, inventory.ClusterSpec{Name: "refused", Kind: inventory.ClusterKubernetes, Kubeconfig: refused.Kubeconfig})
		wantCode(t, err, problem.CodeBadRequest)
		if strings.Contains(err.Error(), kubeconfigtest.RefusedToken) {
			t.Fatalf("the refusal quotes the kubeconfig's token: %v", err)
		}
	}
	if _, err := r.ClusterByName(ctx, "refused"); err == nil {
		t.Fatal("a refused kubeconfig's cluster was stored")
	}

	byName, err := r.ClusterByName(ctx, "prod")
	if err != nil || byName.ID != c.ID {
		t.Fatalf("ClusterByName = %+v, %v", byName, err)
	}
	next, err := r.OpenSession(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := r.Session(ctx, s.ID)
	if old.Status != inventory.SessionClosed || old.ClosedAt == nil {
		t.Fatalf("previous session = %+v", old)
	}
	_, err = r.ActiveSession(ctx, s.ID)
	wantCode(t, err, problem.CodeConflict)
	if got, _ := r.Cluster(ctx, c.ID); got.SessionID != next.ID {
		t.Fatalf("cluster session = %s, want %s", got.SessionID, next.ID)
	}
	_, err = r.Session(ctx, inventory.NewID())
	wantCode(t, err, problem.CodeNotFound)
	list, total, err := r.ListClusters(ctx, inventory.Page{})
	if err != nil || total != 1 || len(list) != 1 {
		t.Fatalf("ListClusters = %d/%d, %v", len(list), total, err)
	}
}

func TestModelServiceResolveAndHealth(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s := localSession(t, r)
	a, b := putExecution(t, r, s.ID, "sk-a"), putExecution(t, r, s.ID, "")
	g, key, err := r.CreateModelService(ctx, inventory.ModelServiceSpec{Name: "chat", PublishedName: "fake-model",
		ClusterSessionID: s.ID, MemberExecutionIDs: []string{a.ID, b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, inventory.AccessKeyPrefix) || len(key) < 40 || !strings.HasPrefix(key, g.AccessKeyPrefix) {
		t.Fatalf("key %q prefix %q", key, g.AccessKeyPrefix)
	}
	stored, _ := r.Store.Get(ctx, inventory.KindModelService, g.ID)
	if strings.Contains(string(stored.Doc), key) {
		t.Fatal("the access key is stored in plain text")
	}
	// No member probed yet: nothing to resolve to.
	_, _, err = r.ResolveModelService(ctx, g.ID, key)
	wantCode(t, err, problem.CodeConflict)
	_, _, err = r.ResolveModelService(ctx, g.ID, "")
	wantCode(t, err, problem.CodeUnauthorized)
	_, _, err = r.ResolveModelService(ctx, g.ID, inventory.AccessKeyPrefix+"wrong")
	wantCode(t, err, problem.CodeForbidden)
	_, _, err = r.ResolveModelService(ctx, inventory.NewID(), key)
	wantCode(t, err, problem.CodeNotFound)

	at := time.Now()
	g, err = r.RecordProbes(ctx, g.ID, []inventory.Probe{{ExecutionID: a.ID, Healthy: false, Error: "connection refused", At: at},
		{ExecutionID: b.ID, Healthy: true, At: at}})
	if err != nil {
		t.Fatal(err)
	}
	if g.ActiveMember == nil || *g.ActiveMember != b.ID || g.Status != inventory.ServiceAvailable ||
		g.Members[0].Health != inventory.HealthUnhealthy || g.Members[0].LastError != "connection refused" || g.Members[1].LastProbeAt == nil {
		t.Fatalf("after probes: %+v", g)
	}
	e, name, err := r.ResolveModelService(ctx, g.ID, key)
	if err != nil || e.ID != b.ID || name != "fake-model" {
		t.Fatalf("resolve = %s %q %v", e.ID, name, err)
	}
	// Both healthy: the active member stays where it is.
	g, _ = r.RecordProbes(ctx, g.ID, []inventory.Probe{{ExecutionID: a.ID, Healthy: true, At: at}, {ExecutionID: b.ID, Healthy: true, At: at}})
	if *g.ActiveMember != b.ID {
		t.Fatalf("active moved to %s while %s stayed healthy", *g.ActiveMember, b.ID)
	}
	// The active one fails: the other takes over.
	g, _ = r.RecordProbes(ctx, g.ID, []inventory.Probe{{ExecutionID: b.ID, Healthy: false, Error: "HTTP 503", At: at}})
	if *g.ActiveMember != a.ID || g.Members[1].ConsecutiveFailures != 1 {
		t.Fatalf("after b failed: %+v", g)
	}
	// All down: unavailable.
	g, _ = r.RecordProbes(ctx, g.ID, []inventory.Probe{{ExecutionID: a.ID, Healthy: false, At: at}})
	if g.ActiveMember != nil || g.Status != inventory.ServiceUnavailable {
		t.Fatalf("all unhealthy: %+v", g)
	}

	// A member cannot be deleted while the group lists it.
	wantCode(t, r.DeleteExecution(ctx, a.ID), problem.CodeConflict)
	if err := r.DeleteModelService(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteExecution(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.DeleteModelService(ctx, g.ID), problem.CodeNotFound)
}

func TestModelServiceMembersMustBelongToTheSession(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s1, s2 := localSession(t, r), localSession(t, r)
	e := putExecution(t, r, s2.ID, "")
	spec := inventory.ModelServiceSpec{Name: "x", PublishedName: "fake-model", ClusterSessionID: s1.ID, MemberExecutionIDs: []string{e.ID}}
	_, _, err := r.CreateModelService(ctx, spec)
	wantCode(t, err, problem.CodeBadRequest)
	// The members must serve the published name: the model, or a name their endpoint listed.
	spec.ClusterSessionID, spec.PublishedName = s2.ID, "alias"
	_, _, err = r.CreateModelService(ctx, spec)
	wantCode(t, err, problem.CodeBadRequest)
	e.Models = []string{"fake-model", "alias"}
	if err := r.PutExecution(ctx, e, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err = r.CreateModelService(ctx, spec); err != nil {
		t.Fatalf("a listed alias: %v", err)
	}
	spec.ClusterSessionID, spec.PublishedName = s1.ID, "fake-model"
	spec.MemberExecutionIDs = []string{inventory.NewID()}
	_, _, err = r.CreateModelService(ctx, spec)
	wantCode(t, err, problem.CodeBadRequest)
	spec.ClusterSessionID, spec.MemberExecutionIDs = s2.ID, []string{e.ID, e.ID}
	_, _, err = r.CreateModelService(ctx, spec)
	wantCode(t, err, problem.CodeBadRequest)
	spec.ClusterSessionID = inventory.NewID()
	_, _, err = r.CreateModelService(ctx, spec)
	wantCode(t, err, problem.CodeNotFound)
}

func TestConfigurationChecksumAndBounds(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	spec := inventory.ConfigurationSpec{Name: "guide-a", SchemaVersion: inventory.ConfigurationSchemaV1, Type: "guide", Format: "lensfn",
		ProviderRef: "optimized-baseline", Content: json.RawMessage(`{ "model": {"name": "Qwen/Qwen3-8B"} }`)}
	c, err := r.CreateConfiguration(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of {"model":{"name":"Qwen/Qwen3-8B"}}
	want, _ := inventory.Checksum(json.RawMessage(`{"model":{"name":"Qwen/Qwen3-8B"}}`))
	if c.Checksum != want || !strings.HasPrefix(c.Checksum, "sha256:") || len(c.Checksum) != 71 {
		t.Fatalf("checksum %s, want %s", c.Checksum, want)
	}
	got, err := r.Configuration(ctx, c.ID)
	if err != nil || string(got.Content) != `{"model":{"name":"Qwen/Qwen3-8B"}}` || string(got.Provenance) != `{}` {
		t.Fatalf("stored = %s %s %v", got.Content, got.Provenance, err)
	}
	list, total, _ := r.ListConfigurations(ctx, inventory.ConfigurationQuery{Type: "guide"})
	if total != 1 || list[0].Content != nil || list[0].Checksum != c.Checksum {
		t.Fatalf("list = %+v", list)
	}

	bad := spec
	bad.Type = "other"
	_, err = r.CreateConfiguration(ctx, bad)
	wantCode(t, err, problem.CodeValidation)
	bad = spec
	bad.Content = json.RawMessage(`[1]`)
	_, err = r.CreateConfiguration(ctx, bad)
	wantCode(t, err, problem.CodeValidation)
	bad.Content = json.RawMessage(`{"model":{"name":"m"},"replicas":2}`)
	_, err = r.CreateConfiguration(ctx, bad)
	wantCode(t, err, problem.CodeValidation)
	if !strings.Contains(fmt.Sprint(err.(*problem.Error).Detail), `unknown key "replicas"`) {
		t.Fatalf("the 422 does not name the unknown key: %v", err.(*problem.Error).Detail)
	}
	other := bad
	other.ProviderRef = "someone-elses-helm-chart"
	if _, err := r.CreateConfiguration(ctx, other); err != nil {
		t.Fatalf("a provider that is not ours keeps its content as given: %v", err)
	}
	bad.Content = json.RawMessage(`{"x":"` + strings.Repeat("a", inventory.MaxConfigurationContentBytes) + `"}`)
	_, err = r.CreateConfiguration(ctx, bad)
	wantCode(t, err, problem.CodeTooLarge)
}
