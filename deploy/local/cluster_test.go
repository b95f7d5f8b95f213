package local

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/state/redisstore"
)

// fakeInventory registers clusters by name like inventory-api: 201 the first time, 409 after.
type fakeInventory struct {
	mu       sync.Mutex
	sessions map[string]string // cluster name -> session id
}

func (f *fakeInventory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/cluster/clusters":
		var body struct{ Name, Kind string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Kind != "local" {
			http.Error(w, "bad body", http.StatusUnprocessableEntity)
			return
		}
		if _, taken := f.sessions[body.Name]; taken {
			w.WriteHeader(http.StatusConflict)
			return
		}
		f.sessions[body.Name] = "session-1"
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"c1","name":"` + body.Name + `","sessionId":"session-1"}`))
	case r.Method == http.MethodGet && r.URL.Path == "/api/cluster/clusters":
		name := r.URL.Query().Get("name")
		_, _ = w.Write([]byte(`{"items":[{"id":"c1","name":"` + name + `","sessionId":"` + f.sessions[name] + `"}],"total":1}`))
	default:
		http.NotFound(w, r)
	}
}

func stackWithInventory(t *testing.T, h http.Handler) *Stack {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	return &Stack{procs: map[string]*process{"inventory-api": {name: "inventory-api", port: port}}}
}

func TestTheStackRegistersTheLocalClusterOnceAndFindsItAfterARestart(t *testing.T) {
	inv := &fakeInventory{sessions: map[string]string{}}
	s := stackWithInventory(t, inv)
	for start := range 2 { // the second start finds the cluster the first registered
		id, err := s.registerLocalCluster(context.Background())
		if err != nil || id != "session-1" {
			t.Fatalf("start %d: session %q, %v", start, id, err)
		}
	}
	if len(inv.sessions) != 1 || inv.sessions[LocalClusterName] == "" {
		t.Fatalf("registered %v", inv.sessions)
	}
}

func TestARefusedRegistrationFailsTheStart(t *testing.T) {
	s := stackWithInventory(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no store", http.StatusServiceUnavailable)
	}))
	if _, err := s.registerLocalCluster(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v", err)
	}
	if id, err := (&Stack{procs: map[string]*process{}}).registerLocalCluster(context.Background()); id != "" || err != nil {
		t.Fatalf("without inventory-api: %q, %v", id, err)
	}
}

func TestWithAuthRequiredTheRegistrationUsesAShortLivedAdminToken(t *testing.T) {
	embedded, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(embedded.Close)
	ctx := context.Background()
	store, err := redisstore.Open(ctx, embedded.URL(), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tokens := &auth.Tokens{Store: store}
	inv := &fakeInventory{sessions: map[string]string{}}
	s := stackWithInventory(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := tokens.Verify(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if err != nil || !token.Allows(auth.InventoryAdmin) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inv.ServeHTTP(w, r)
	}))
	s.opts.Auth, s.RedisURL = "required", embedded.URL()
	if id, err := s.registerLocalCluster(ctx); err != nil || id != "session-1" {
		t.Fatalf("session %q, %v", id, err)
	}
	if left, err := tokens.List(ctx); err != nil || len(left) != 0 {
		t.Fatalf("the registration token was not revoked: %v %v", left, err)
	}
}
