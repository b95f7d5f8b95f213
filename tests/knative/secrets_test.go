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
