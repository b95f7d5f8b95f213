package local

import (
	"slices"
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
