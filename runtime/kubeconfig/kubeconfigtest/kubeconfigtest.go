package kubeconfigtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

// Token is a kubeconfig whose one context reaches server with a bearer token.
func Token(server, token string) string { return tokenWith(server, token, "", "", "ctx") }

// TokenTrusting is Token whose cluster trusts the PEM certificate caPEM (a TLS test server's
// own certificate, for one), so a client built from it really reaches that server.
func TokenTrusting(server, token string, caPEM []byte) string {
	return tokenWith(server, token, "    certificate-authority-data: "+base64.StdEncoding.EncodeToString(caPEM)+"\n", "", "ctx")
}

// tokenWith is Token with lines added to its cluster and its user, and another current context.
func tokenWith(server, token, clusterLines, userLines, current string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
%susers:
- name: u
  user:
    token: %s
%scontexts:
- name: ctx
  context: {cluster: c, user: u, namespace: eval}
current-context: %s
`, server, clusterLines, token, userLines, current)
}

// RefusedToken is the bearer token of every Refused kubeconfig: a refusal must not quote it.
const RefusedToken = "refused-kubeconfig-token-4f1d"

// A RefusedCase is a kubeconfig the rule refuses and the field its refusal names.
type RefusedCase struct {
	Name, Field, Kubeconfig string
}

// Refused returns one kubeconfig per refused feature; each reaches server with RefusedToken
// and would be accepted without its one refused part. An exec plugin in them runs
// `touch <marker>`, so a test can see that it never ran.
func Refused(server, marker string) []RefusedCase {
	user := func(lines string) string { return tokenWith(server, RefusedToken, "", lines, "ctx") }
	cluster := func(lines string) string { return tokenWith(server, RefusedToken, lines, "", "ctx") }
	exec := fmt.Sprintf("    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch %s'], interactiveMode: Never}\n", marker)
	return []RefusedCase{
		// The exec plugin is the user's only credential, so that client-go would run it.
		{"exec plugin", `users["u"].user.exec`, strings.Replace(user(exec), "    token: "+RefusedToken+"\n", "", 1)},
		{"auth-provider", `users["u"].user.auth-provider`, user("    auth-provider: {name: oidc, config: {idp-issuer-url: 'https://idp.example'}}\n")},
		{"tokenFile", `users["u"].user.tokenFile`, user("    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n")},
		{"client-certificate path", `users["u"].user.client-certificate`, user("    client-certificate: /etc/lensfn/tls.crt\n")},
		{"client-key path", `users["u"].user.client-key`, user("    client-key: /etc/lensfn/tls.key\n")},
		{"certificate-authority path", `clusters["c"].cluster.certificate-authority`, cluster("    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n")},
		{"proxy-url", `clusters["c"].cluster.proxy-url`, cluster("    proxy-url: http://proxy.example:3128\n")},
		{"username and password", `users["u"].user.password`, user("    username: admin\n    password: " + RefusedToken + "-pw\n")},
		{"impersonation", `users["u"].user.as`, user("    as: system:admin\n")},
		{"unknown field", `users["u"].user.Exec`, user("    Exec: {command: /bin/sh}\n")},
		{"exec in a user no context uses", `users["other"].user.exec`,
			tokenWith(server, RefusedToken, "", "- name: other\n  user:\n"+exec, "ctx")},
		{"exec behind a second context", `users["other"].user.exec`,
			strings.Replace(tokenWith(server, RefusedToken, "", "- name: other\n  user:\n"+exec, "ctx"),
				"contexts:\n", "contexts:\n- name: switch\n  context: {cluster: c, user: other}\n", 1)},
		{"user named twice", `users["u"]`, user("- name: u\n  user:\n" + exec)},
		{"no current-context", "current-context", tokenWith(server, RefusedToken, "", "", "''")},
		{"current-context pointing nowhere", "current-context", tokenWith(server, RefusedToken, "", "", "elsewhere")},
		{"context naming no cluster", `contexts["ctx"].context.cluster`,
			strings.Replace(user(""), "{cluster: c,", "{cluster: gone,", 1)},
		{"server that is not a URL", `clusters["c"].cluster.server`, tokenWith("/var/run/docker.sock", RefusedToken, "", "", "ctx")},
		{"server over plain http", `clusters["c"].cluster.server`, tokenWith(strings.Replace(server, "https://", "http://", 1), RefusedToken, "", "", "ctx")},
		{"not YAML", "", "apiVersion: v1\n\tkind: [Config\ntoken: " + RefusedToken + "\n"},
	}
}

// Certificate is a kubeconfig whose one context trusts a fresh CA and authenticates with a
// client certificate that CA issued, all inline (base64 PEM).
func Certificate(t testing.TB, server string) string {
	t.Helper()
	caKey, caCert := issue(t, "lensfn test CA", nil, nil)
	key, cert := issue(t, "lensfn test client", caCert, caKey)
	b64 := func(typ string, der []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`, server, b64("CERTIFICATE", caCert.Raw), b64("CERTIFICATE", cert.Raw), b64("PRIVATE KEY", keyDER))
}

// issue makes a key and a certificate for it, self-signed when parent is nil.
func issue(t testing.TB, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}
