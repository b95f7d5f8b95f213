package local

import (
	"slices"
	"strings"
	"testing"
)

// TestSimulatorListensOnLoopback: the stack starts the simulator with
// --host 127.0.0.1 on top of the manifest's own flags.
func TestSimulatorListensOnLoopback(t *testing.T) {
	m, err := LoadManifests("../knative")
	if err != nil {
		t.Fatal(err)
	}
	svc, ok := m.Service("inference-sim")
	if !ok {
		t.Fatal("no inference-sim service in deploy/knative")
	}
	args := localArgs(svc)
	i := slices.Index(args, "--host")
	if i < 0 || i+1 >= len(args) || args[i+1] != "127.0.0.1" {
		t.Fatalf("simulator args %q lack --host 127.0.0.1", args)
	}
	if !slices.Equal(args[:len(svc.Args)], svc.Args) {
		t.Fatalf("manifest args changed: %q", args)
	}
	if slices.Contains(svc.Args, "--host") {
		t.Fatal("the manifest itself must not pin the simulator to loopback (a pod listens on all interfaces)")
	}
}

// TestClusterURLsBecomeLoopbackURLs: a manifest's env value naming a function by its in-cluster
// address (the inference-router's ROUTER_REPLICAS) gets the stack's loopback URL of that
// function; anything else is left alone, and the simulator starts first so the router finds it.
func TestClusterURLsBecomeLoopbackURLs(t *testing.T) {
	running := map[string]string{"inference-sim": "http://127.0.0.1:8000"}
	lookup := func(name string) (string, bool) { u, ok := running[name]; return u, ok }
	for in, want := range map[string]string{
		"http://inference-sim.lensfn.svc.cluster.local":                                                 "http://127.0.0.1:8000",
		"http://inference-sim.lensfn.svc.cluster.local,http://inference-sim.other.svc.cluster.local/v1": "http://127.0.0.1:8000,http://127.0.0.1:8000/v1",
		"http://vllm.models.svc.cluster.local":                                                          "http://vllm.models.svc.cluster.local",
		"optimized":                                                                                     "optimized",
	} {
		if got := rewriteClusterURLs(in, lookup); got != want {
			t.Errorf("rewriteClusterURLs(%q) = %q, want %q", in, got, want)
		}
	}
	m, err := LoadManifests("../knative")
	if err != nil {
		t.Fatal(err)
	}
	router, ok := m.Service("inference-router")
	if !ok || !strings.Contains(router.Env["ROUTER_REPLICAS"], "inference-sim.") {
		t.Fatalf("the router's manifest no longer names the simulator in ROUTER_REPLICAS: %+v", router.Env)
	}
	if order := simulatorFirst(m.Services); order[0].Name != SimulatorService || len(order) != len(m.Services) {
		t.Fatalf("start order begins with %s (%d of %d services)", order[0].Name, len(order), len(m.Services))
	}
}
