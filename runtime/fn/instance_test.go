package fn_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/lensfn/lensfn/runtime/fn"
)

// The Knative manifests set no POD_NAME (Knative refuses fieldRef by default), so the instance is
// named after the host, which Kubernetes sets to the pod name, and the process.
func TestInstanceIDWithoutPodNameIsHostAndPID(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname:", err)
	}
	c, err := fn.LoadConfig(env(map[string]string{"K_SERVICE": "trace-replayer"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%s-%d", host, os.Getpid()); c.InstanceID != want {
		t.Fatalf("InstanceID = %q, want %q", c.InstanceID, want)
	}
}
