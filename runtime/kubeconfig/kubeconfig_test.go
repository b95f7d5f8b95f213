package kubeconfig_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/kubeconfig"
	"github.com/lensfn/lensfn/runtime/kubeconfig/kubeconfigtest"
)

const server = "https://127.0.0.1:6443"

// An inline kubeconfig gives exactly its current context's credentials, in YAML or JSON.
func TestParseAcceptsInlineCredentials(t *testing.T) {
	creds, err := kubeconfig.Parse([]byte(kubeconfigtest.Token(server, "tok-1")))
	if err != nil || creds.Server != server || creds.Token != "tok-1" || creds.CAData != nil || creds.CertData != nil {
		t.Fatalf("token kubeconfig: %v, %v", creds, err)
	}
	creds, err = kubeconfig.Parse([]byte(kubeconfigtest.Certificate(t, server)))
	if err != nil || creds.Token != "" || !strings.Contains(string(creds.CAData), "BEGIN CERTIFICATE") ||
		!strings.Contains(string(creds.CertData), "BEGIN CERTIFICATE") || !strings.Contains(string(creds.KeyData), "PRIVATE KEY") {
		t.Fatalf("certificate kubeconfig: %v, %v", creds, err)
	}
	js := `{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://k.example","insecure-skip-tls-verify":true,"tls-server-name":"api"}}],
		"users":[{"name":"u","user":{"token":"t"}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"current-context":"x"}`
	creds, err = kubeconfig.Parse([]byte(js))
	if err != nil || !creds.Insecure || creds.TLSServerName != "api" || creds.Token != "t" {
		t.Fatalf("JSON kubeconfig: %v, %v", creds, err)
	}
	// Credentials print without their secrets.
	if s := fmt.Sprintf("%v %+v %#v %s", creds, creds, creds, creds); strings.Contains(s, `"t"`) || strings.Contains(s, " t ") {
		t.Fatalf("credentials print their token: %s", s)
	}
}

// Everything but inline data is refused, in any entry, with the field named and nothing of the
// kubeconfig quoted.
func TestParseRefusesAllButInlineCredentials(t *testing.T) {
	for _, tc := range kubeconfigtest.Refused(server, "/nonexistent/marker") {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := kubeconfig.Parse([]byte(tc.Kubeconfig))
			var r *kubeconfig.Refusal
			if !errors.As(err, &r) || r.Field != tc.Field {
				t.Fatalf("Parse = %v, want a refusal of %q", err, tc.Field)
			}
			if strings.Contains(err.Error(), kubeconfigtest.RefusedToken) || strings.Contains(err.Error(), "/var/run") ||
				strings.Contains(err.Error(), "touch") {
				t.Fatalf("the refusal quotes the kubeconfig: %v", err)
			}
		})
	}
}

// A CA or key pair that is not PEM, base64 that is not base64, and half a key pair are refused
// naming the field.
func TestParseRefusesBadInlineData(t *testing.T) {
	good := kubeconfigtest.Certificate(t, server)
	set := func(key, line string) string {
		return regexp.MustCompile(`(?m)^    `+key+`: .*$`).ReplaceAllString(good, line)
	}
	for _, tc := range []struct{ name, kubeconfig, field string }{
		{"CA not PEM", set("certificate-authority-data", "    certificate-authority-data: aGVsbG8K"), `clusters["c"].cluster.certificate-authority-data`},
		{"not base64", set("client-key-data", "    client-key-data: not-base64@@"), `users["u"].user.client-key-data`},
		{"certificate without its key", set("client-key-data", ""), `users["u"].user.client-key-data`},
		{"key of another certificate", set("client-certificate-data", "    client-certificate-data: "+caData(good)), `users["u"].user.client-certificate-data`},
		{"insecure with a CA", set("server", "    server: "+server+"\n    insecure-skip-tls-verify: true"), `clusters["c"].cluster.insecure-skip-tls-verify`},
	} {
		_, err := kubeconfig.Parse([]byte(tc.kubeconfig))
		var r *kubeconfig.Refusal
		if !errors.As(err, &r) || r.Field != tc.field {
			t.Errorf("%s: Parse = %v, want a refusal of %q", tc.name, err, tc.field)
		}
	}
}

func caData(kubeconfig string) string {
	return regexp.MustCompile(`certificate-authority-data: (\S+)`).FindStringSubmatch(kubeconfig)[1]
}

// Parse never panics, and a refusal never quotes a value of the kubeconfig longer than a name.
func FuzzParse(f *testing.F) {
	for _, tc := range kubeconfigtest.Refused(server, "/nonexistent/marker") {
		f.Add([]byte(tc.Kubeconfig))
	}
	f.Add([]byte(kubeconfigtest.Token(server, "tok")))
	f.Add([]byte(`{"clusters":[{"name":"c","cluster":{"server":"https://x"}}],"current-context":"c"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		creds, err := kubeconfig.Parse(raw)
		if err == nil {
			if creds.Server == "" {
				t.Fatalf("accepted without a server: %s", raw)
			}
			return
		}
		var r *kubeconfig.Refusal
		if !errors.As(err, &r) {
			t.Fatalf("not a refusal: %v", err)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
