package knative_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// secretRef is a secretKeyRef anywhere in a manifest object.
type secretRef struct {
	Name, Key string
	Optional  bool
}

// secretRefs walks an object's JSON for valueFrom.secretKeyRef, keyed by the env var's name.
func secretRefs(node any, out map[string]secretRef) {
	switch n := node.(type) {
	case map[string]any:
		if from, ok := n["valueFrom"].(map[string]any); ok {
			if ref, ok := from["secretKeyRef"].(map[string]any); ok {
				name, _ := n["name"].(string)
				r := secretRef{}
				r.Name, _ = ref["name"].(string)
				r.Key, _ = ref["key"].(string)
				r.Optional, _ = ref["optional"].(bool)
				out[name] = r
			}
		}
		for _, v := range n {
			secretRefs(v, out)
		}
	case []any:
		for _, v := range n {
			secretRefs(v, out)
		}
	}
}

var fromLiteral = regexp.MustCompile(`^--from-literal=([^=]+)=`)

// createdSecrets lists "name/key" of every Secret key the kn scripts create.
func createdSecrets(cmds []command) []string {
	var out []string
	for _, c := range cmds {
		i := slices.Index(c.words, "secret")
		if c.words[0] != "kubectl" || i < 0 || i+2 >= len(c.words) || c.words[i-1] != "create" || c.words[i+1] != "generic" {
			continue
		}
		for _, w := range c.words[i+3:] {
			if m := fromLiteral.FindStringSubmatch(w); m != nil {
				out = append(out, c.words[i+2]+"/"+m[1])
			}
		}
	}
	return out
}

// Every Secret key a manifest reads, and is not optional about, is created by the kn scripts, so
// no pod waits forever on CreateContainerConfigError; and the simulator's --admin-token comes
// from a Secret, so /admin/* is protected on the cluster (#9).
func TestEverySecretAManifestReadsIsCreated(t *testing.T) {
	created := createdSecrets(scripts(t))
	if len(created) == 0 {
		t.Fatal("the kn scripts create no Secret")
	}
	simAdmin := false
	for _, o := range manifests(t) {
		var doc any
		if err := json.Unmarshal(o.JSON, &doc); err != nil {
			t.Fatal(err)
		}
		refs := map[string]secretRef{}
		secretRefs(doc, refs)
		for env, r := range refs {
			if !r.Optional && !slices.Contains(created, r.Name+"/"+r.Key) {
				t.Errorf("%s: %s reads Secret %s key %s, which no kn script creates (created: %s)", o.File, env, r.Name, r.Key, strings.Join(created, ", "))
			}
		}
		if m := metaOf(o); m.is("serving.knative.dev/v1", "Service", "inference-sim") {
			_, simAdmin = refs["LENS_SIM_ADMIN_TOKEN"]
			if refs["LENS_SIM_ADMIN_TOKEN"].Optional {
				t.Errorf("%s: LENS_SIM_ADMIN_TOKEN is optional, so /admin/* could run unprotected", o.File)
			}
		}
	}
	if !simAdmin {
		t.Error("inference-sim.yaml does not read LENS_SIM_ADMIN_TOKEN (--admin-token) from a Secret")
	}
}

// Every Service that talks to the cluster's Redis authenticates to it (redis.yaml starts it with
// --requirepass from the lensfn-redis Secret, so a Service without REDIS_PASSWORD could not reach
// its store), and every function of the runtime (they are the ones with a store) needs bearer
// tokens (#9: the manifests set LENS_AUTH=required) and accepts the bootstrap admin token.
func TestEveryStoreUserAuthenticatesAndRequiresTokens(t *testing.T) {
	users := 0
	for _, o := range manifests(t) {
		if !metaOf(o).is("serving.knative.dev/v1", "Service", "") {
			continue
		}
		var doc any
		if err := json.Unmarshal(o.JSON, &doc); err != nil {
			t.Fatal(err)
		}
		refs := map[string]secretRef{}
		secretRefs(doc, refs)
		values := envValues(t, o)
		if _, ok := values["REDIS_URL"]; !ok {
			continue
		}
		users++
		if pw, ok := refs["REDIS_PASSWORD"]; !ok || pw.Name != "lensfn-redis" || pw.Key != "password" || pw.Optional {
			t.Errorf("%s: sets REDIS_URL but does not read REDIS_PASSWORD from Secret lensfn-redis key password (got %+v)", o.File, pw)
		}
		if values["LENS_AUTH"] != "required" {
			t.Errorf("%s: LENS_AUTH is %q, want required", o.File, values["LENS_AUTH"])
		}
		if boot, ok := refs["LENS_BOOTSTRAP_TOKEN_SHA256"]; !ok || boot.Name != "lensfn-bootstrap-token" {
			t.Errorf("%s: does not read LENS_BOOTSTRAP_TOKEN_SHA256 from Secret lensfn-bootstrap-token, so the admin token cannot sign in", o.File)
		}
	}
	if users < 8 {
		t.Fatalf("only %d Services set REDIS_URL; the check saw too few to mean anything", users)
	}
}

// envValues maps a Service's container env names to their literal values ("" for valueFrom).
func envValues(t *testing.T, o object) map[string]string {
	t.Helper()
	var svc struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Env []struct{ Name, Value string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(o.JSON, &svc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range svc.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			out[e.Name] = e.Value
		}
	}
	return out
}
