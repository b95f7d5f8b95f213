package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The stack runs each Service from the cmd its image names, except the deployer, which it runs
// from its local build (the local provider only); the Knative manifest keeps the image's cmd, and
// `make build` builds exactly the cmds the stack runs: the local build, not the image cmd it
// replaces.
func TestTheStackRunsEachFunctionsLocalBuild(t *testing.T) {
	m, err := LoadManifests("../knative")
	if err != nil {
		t.Fatal(err)
	}
	dep, ok := m.Service("deployer")
	if !ok {
		t.Fatal("no deployer service in deploy/knative")
	}
	if dep.Image != koPrefix+"functions/deployer/cmd/deployer" || dep.Package != "functions/deployer/cmd/deployer-local" || dep.Binary != "deployer-local" {
		t.Fatalf("deployer: image %s, package %s, binary %s", dep.Image, dep.Package, dep.Binary)
	}
	out, err := exec.Command("make", "-s", "-n", "-C", "../..", "build").CombinedOutput()
	if err != nil {
		t.Skipf("make -n build: %v\n%s", err, out) // no make: the Makefile is not what runs
	}
	built := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		built[strings.TrimPrefix(f, "./")] = true
	}
	for _, svc := range m.Services {
		if _, err := os.Stat(filepath.Join("../..", svc.Package, "main.go")); err != nil {
			t.Errorf("%s: the stack runs %s, which is not a command: %v", svc.Name, svc.Package, err)
		}
		if !built[svc.Package] || filepath.Base(svc.Package) != svc.Binary {
			t.Errorf("%s: make build does not build %s as bin/%s:\n%s", svc.Name, svc.Package, svc.Binary, out)
		}
	}
	for image := range LocalBuilds {
		if built[image] {
			t.Errorf("make build builds %s, which the stack replaces with its local build:\n%s", image, out)
		}
	}
}
