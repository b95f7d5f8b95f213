package inventoryapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
)

// TestClusterWithAMetadataServerIsRefused: a kubeconfig whose server the endpoint policy
// refuses (the cloud metadata addresses by default) is not registered, and the answer never
// shows the kubeconfig's token.
func TestClusterWithAMetadataServerIsRefused(t *testing.T) {
	h := newHarness(t, quietConfig)
	for i, server := range []string{"https://169.254.169.254:6443", "https://[fd00:ec2::254]:443", "https://[fe80::1%25eth0]:6443"} {
		body, _ := json.Marshal(map[string]string{"name": "meta-" + string(rune('a'+i)), "kind": "kubernetes",
			"kubeconfig": kubeconfigtest.Token(server, "kube-secret-token")})
		raw := h.expect(t, "POST", "/api/cluster/clusters", string(body), 400)
		if !strings.Contains(raw, "not allowed") || strings.Contains(raw, "kube-secret-token") {
			t.Fatalf("%s: %s", server, raw)
		}
	}
	if code, raw := h.call(t, "GET", "/api/cluster/clusters", "", nil); code != 200 || !strings.Contains(raw, `"total":0`) {
		t.Fatalf("a refused cluster was registered: %d %s", code, raw)
	}
}
