package kubeconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Credentials are what a client of the current context's cluster is built from: all of it
// inline, none of it a path, a command or a proxy.
type Credentials struct {
	Server        string // https:// URL of the API server
	TLSServerName string
	Insecure      bool   // insecure-skip-tls-verify
	CAData        []byte // PEM, from certificate-authority-data
	CertData      []byte // PEM, from client-certificate-data
	KeyData       []byte // PEM, from client-key-data
	Token         string // bearer token
}

// String names the server only, so that printing Credentials never prints a secret.
func (c Credentials) String() string { return "kubeconfig credentials for " + c.Server }

// GoString is String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// Refusal is why a kubeconfig is not accepted: the field (a path such as
// users["ci"].user.exec, "" for the document as a whole) and the reason. It never holds a value
// from the kubeconfig other than entry names.
type Refusal struct {
	Field  string
	Reason string
}

func (r *Refusal) Error() string {
	if r.Field == "" {
		return "kubeconfig: " + r.Reason
	}
	return "kubeconfig: " + r.Field + ": " + r.Reason
}

func refuse(field, format string, args ...any) *Refusal {
	return &Refusal{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Why each field a kubeconfig may hold is refused. Every field not listed here and not in the
// accepted sets below is refused as unknown, so a field a later client-go learns is refused
// until someone decides it is safe.
const (
	whyFile     = "reads a file of the machine that reads the kubeconfig; give the data inline (%s)"
	whyCommand  = "runs a credential plugin on the deployer; give a token or client certificate inline"
	whyProvider = "runs an auth-provider plugin on the deployer; give a token or client certificate inline"
	whyProxy    = "sends the deployer's traffic through a proxy the kubeconfig chooses; reach the API server directly"
	whyBasic    = "basic authentication is not supported (Kubernetes removed it in 1.19); give a token or client certificate inline"
	whyAs       = "impersonation is not supported; give the credentials of the identity to act as"
)

var refusedCluster = map[string]string{
	"certificate-authority": fmt.Sprintf(whyFile, "certificate-authority-data"),
	"proxy-url":             whyProxy,
}

var refusedUser = map[string]string{
	"client-certificate": fmt.Sprintf(whyFile, "client-certificate-data"),
	"client-key":         fmt.Sprintf(whyFile, "client-key-data"),
	"tokenFile":          fmt.Sprintf(whyFile, "token"),
	"exec":               whyCommand,
	"auth-provider":      whyProvider,
	"username":           whyBasic,
	"password":           whyBasic,
	"as":                 whyAs,
	"as-uid":             whyAs,
	"as-groups":          whyAs,
	"as-user-extra":      whyAs,
}

// The fields accepted, by kind of value. extensions are accepted and ignored: nothing reads them
// to build a client.
var (
	acceptedTop     = fields{"apiVersion": kString, "kind": kString, "preferences": kAny, "clusters": kList, "users": kList, "contexts": kList, "current-context": kString, "extensions": kAny}
	acceptedCluster = fields{"server": kString, "tls-server-name": kString, "insecure-skip-tls-verify": kBool, "certificate-authority-data": kString, "disable-compression": kBool, "extensions": kAny}
	acceptedUser    = fields{"client-certificate-data": kString, "client-key-data": kString, "token": kString, "extensions": kAny}
	acceptedContext = fields{"cluster": kString, "user": kString, "namespace": kString, "extensions": kAny}
)

type kind int

const (
	kAny kind = iota
	kString
	kBool
	kList
	kMap
)

func (k kind) String() string {
	return [...]string{"anything", "a string", "true or false", "a list", "a mapping"}[k]
}

type fields map[string]kind

var yamlLine = regexp.MustCompile(`line (\d+)`)

// Parse reads a kubeconfig (YAML or JSON) and returns the credentials of its current context. It
// refuses, with a *Refusal, a kubeconfig that is not a kubeconfig, any field that is not inline
// data (anywhere in it, used by the current context or not), duplicate entry names, and a
// current context that does not resolve to a cluster (and a user, when it names one).
func Parse(raw []byte) (Credentials, error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		// The YAML parser's messages can quote the document; keep only the line.
		where := ""
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			where = " (line " + m[1] + ")"
		}
		return Credentials{}, refuse("", "is neither YAML nor JSON%s", where)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return Credentials{}, refuse("", "is neither YAML nor JSON")
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return Credentials{}, refuse("", "must be a mapping (apiVersion: v1, kind: Config, clusters, users, contexts, current-context)")
	}
	if err := check("", top, acceptedTop, nil); err != nil {
		return Credentials{}, err
	}
	if v, _ := top["apiVersion"].(string); v != "" && v != "v1" {
		return Credentials{}, refuse("apiVersion", "must be v1")
	}
	if v, _ := top["kind"].(string); v != "" && v != "Config" {
		return Credentials{}, refuse("kind", "must be Config")
	}
	// Every entry is checked, not only the current context's: what is stored must hold nothing
	// that a later context switch could make a client use.
	clusters, err := entries(top, "clusters", "cluster", acceptedCluster, refusedCluster, func(name string, c map[string]any) error {
		_, err := clusterCredentials(name, c)
		return err
	})
	if err != nil {
		return Credentials{}, err
	}
	users, err := entries(top, "users", "user", acceptedUser, refusedUser, func(name string, u map[string]any) error {
		return userCredentials(name, u, &Credentials{})
	})
	if err != nil {
		return Credentials{}, err
	}
	contexts, err := entries(top, "contexts", "context", acceptedContext, nil, nil)
	if err != nil {
		return Credentials{}, err
	}

	current, _ := top["current-context"].(string)
	if current == "" {
		return Credentials{}, refuse("current-context", "is required: the deployer uses the current context and no other")
	}
	ctx, ok := contexts[current]
	if !ok {
		return Credentials{}, refuse("current-context", "names no context of contexts")
	}
	ctxField := entryField("contexts", current) + ".context"
	clusterName, _ := ctx["cluster"].(string)
	cluster, ok := clusters[clusterName]
	if !ok {
		return Credentials{}, refuse(ctxField+".cluster", "names no cluster of clusters")
	}
	creds, err := clusterCredentials(clusterName, cluster)
	if err != nil {
		return Credentials{}, err
	}
	if userName, _ := ctx["user"].(string); userName != "" {
		user, ok := users[userName]
		if !ok {
			return Credentials{}, refuse(ctxField+".user", "names no user of users")
		}
		if err := userCredentials(userName, user, &creds); err != nil {
			return Credentials{}, err
		}
	}
	return creds, nil
}

// check refuses, in a stable order, every field of m that is refused or not accepted, and every
// accepted one of the wrong kind.
func check(at string, m map[string]any, accepted fields, refused map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field := join(at, k)
		if why, ok := refused[k]; ok {
			return refuse(field, "%s", why)
		}
		want, ok := accepted[k]
		if !ok {
			return refuse(field, "is not a field this kubeconfig may hold (accepted: %s)", strings.Join(sortedKeys(accepted), ", "))
		}
		if !isKind(m[k], want) {
			return refuse(field, "must be %s", want)
		}
	}
	return nil
}

func isKind(v any, k kind) bool {
	if v == nil {
		return true // null is an absent field
	}
	switch k {
	case kString:
		_, ok := v.(string)
		return ok
	case kBool:
		_, ok := v.(bool)
		return ok
	case kList:
		_, ok := v.([]any)
		return ok
	case kMap:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

// entries reads the named list (clusters, users, contexts): each item is {name, <inner>: {...}},
// names are unique and required, and every inner mapping passes check and then validate.
func entries(top map[string]any, list, inner string, accepted fields, refused map[string]string,
	validate func(name string, body map[string]any) error) (map[string]map[string]any, error) {
	items, _ := top[list].([]any)
	out := make(map[string]map[string]any, len(items))
	for i, raw := range items {
		at := fmt.Sprintf("%s[%d]", list, i)
		item, ok := raw.(map[string]any)
		if !ok {
			return nil, refuse(at, "must be a mapping of name and %s", inner)
		}
		if err := check(at, item, fields{"name": kString, inner: kMap}, nil); err != nil {
			return nil, err
		}
		name, _ := item["name"].(string)
		if name == "" {
			return nil, refuse(at+".name", "is required")
		}
		at = entryField(list, name)
		if _, dup := out[name]; dup {
			return nil, refuse(at, "is named twice")
		}
		body, _ := item[inner].(map[string]any)
		if body == nil {
			body = map[string]any{}
		}
		if err := check(at+"."+inner, body, accepted, refused); err != nil {
			return nil, err
		}
		if validate != nil {
			if err := validate(name, body); err != nil {
				return nil, err
			}
		}
		out[name] = body
	}
	return out, nil
}

func clusterCredentials(name string, c map[string]any) (Credentials, error) {
	at := entryField("clusters", name) + ".cluster"
	server, _ := c["server"].(string)
	u, err := url.Parse(server)
	switch {
	case server == "":
		return Credentials{}, refuse(at+".server", "is required")
	case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil:
		// Not http://: the credentials would cross the network in the clear (clientcmd drops
		// them for an http:// server; a client built from Credentials would send them).
		return Credentials{}, refuse(at+".server", "must be an https:// URL of the API server, without user information")
	}
	creds := Credentials{Server: server}
	creds.TLSServerName, _ = c["tls-server-name"].(string)
	creds.Insecure, _ = c["insecure-skip-tls-verify"].(bool)
	if creds.CAData, err = pemData(at, c, "certificate-authority-data"); err != nil {
		return Credentials{}, err
	}
	if creds.CAData != nil {
		if creds.Insecure {
			return Credentials{}, refuse(at+".insecure-skip-tls-verify", "cannot be set with certificate-authority-data")
		}
		if !x509.NewCertPool().AppendCertsFromPEM(creds.CAData) {
			return Credentials{}, refuse(at+".certificate-authority-data", "holds no PEM certificate")
		}
	}
	return creds, nil
}

func userCredentials(name string, u map[string]any, creds *Credentials) error {
	at := entryField("users", name) + ".user"
	var err error
	creds.Token, _ = u["token"].(string)
	if creds.CertData, err = pemData(at, u, "client-certificate-data"); err != nil {
		return err
	}
	if creds.KeyData, err = pemData(at, u, "client-key-data"); err != nil {
		return err
	}
	switch {
	case creds.CertData != nil && creds.KeyData == nil:
		return refuse(at+".client-key-data", "is required with client-certificate-data")
	case creds.KeyData != nil && creds.CertData == nil:
		return refuse(at+".client-certificate-data", "is required with client-key-data")
	case creds.CertData != nil:
		if _, err := tls.X509KeyPair(creds.CertData, creds.KeyData); err != nil {
			// X509KeyPair's messages describe the PEM, never quote it; still, say it in our words.
			return refuse(at+".client-certificate-data", "and client-key-data are not a PEM certificate and its private key")
		}
	}
	return nil
}

// pemData decodes a *-data field (base64 of PEM, as kubectl writes it); nil when absent.
func pemData(at string, m map[string]any, key string) ([]byte, error) {
	s, _ := m[key].(string)
	if s == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, refuse(at+"."+key, "is not base64")
	}
	return b, nil
}

func entryField(list, name string) string {
	if len(name) > 64 {
		name = name[:64] + "…"
	}
	return fmt.Sprintf("%s[%q]", list, name)
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func sortedKeys(f fields) []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
