package knative_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admission "github.com/lensfn/lensfn/runtime/knativeadmission"
)

const (
	deployDir = "../../deploy/knative"
	// examplesDir holds manifests applied by no script (the nightly PingSource).
	examplesDir = "../../deploy/examples"
)

// crdDir is <shared>/reference/knative-crds: LENS_SHARED_DIR, default ../shared beside the
// repository (CI lays shared/ there).
var crdDir = filepath.Join(sharedDir(), "reference", "knative-crds")

func sharedDir() string {
	if dir := os.Getenv("LENS_SHARED_DIR"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "..", "shared")
}

// object is one object of a manifest file under deploy/knative.
type object = admission.Manifest

func manifests(t *testing.T) []object {
	t.Helper()
	objects, err := readManifests(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	return objects
}

// meta is what names an object.
type meta struct {
	APIVersion, Kind string
	Metadata         struct{ Name string }
}

func metaOf(o object) meta {
	var m meta
	_ = json.Unmarshal(o.JSON, &m) // admission reports malformed objects
	return m
}

// is matches apiVersion and kind, and the name unless it is "".
func (m meta) is(apiVersion, kind, name string) bool {
	return m.APIVersion == apiVersion && m.Kind == kind && (name == "" || m.Metadata.Name == name)
}

func readManifests(dir string) ([]object, error) {
	objects, err := admission.ReadManifests(dir)
	if err == nil && len(objects) == 0 {
		err = fmt.Errorf("no objects in %s", dir)
	}
	return objects, err
}

// admission is what validating a manifest directory found.
type admissionReport struct {
	problems        []string       // one per refused object
	checked         map[string]int // by kind
	notChecked      []string       // External kinds
	skippedEventing int            // Eventing objects, when the CRD schemas are absent
}

// admitDir validates every object under dir under the serving ConfigMaps dir itself declares.
func admitDir(dir, crds string) (admissionReport, error) {
	r := admissionReport{checked: map[string]int{}}
	servingConfig, err := admission.ServingConfigIn(dir)
	if err != nil {
		return r, err
	}
	v, err := admission.New(admission.Options{ServingConfig: servingConfig, CRDDir: crds})
	if err != nil {
		return r, err
	}
	objects, err := readManifests(dir)
	if err != nil {
		return r, err
	}
	for _, o := range objects {
		out, err := v.Validate(context.Background(), o.JSON)
		switch {
		case errors.Is(err, admission.ErrNoSchemas):
			r.skippedEventing++
		case err != nil:
			r.problems = append(r.problems, o.File+": "+err.Error())
		case strings.HasPrefix(out.How, "not checked"):
			r.notChecked = append(r.notChecked, o.File+": "+out.Object+": "+out.How)
		default:
			r.checked[strings.Fields(out.Object)[0]]++
		}
	}
	return r, nil
}

// crdsIfPresent returns crdDir, or "" (Services only) when the shared directory lacks it.
func crdsIfPresent() string {
	if _, err := os.Stat(crdDir); err != nil {
		return ""
	}
	return crdDir
}

// Every object of every file in deploy/knative, including files added later, is admitted cleanly:
// no error, no warning.
func TestEveryManifestIsAdmitted(t *testing.T) {
	crds := crdsIfPresent()
	r, err := admitDir(deployDir, crds)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.problems {
		t.Error(p)
	}
	for _, n := range r.notChecked {
		t.Log(n)
	}
	// Guard against passing by checking nothing.
	if r.checked["Service"] < 4 {
		t.Errorf("only %d Services checked: %v", r.checked["Service"], r.checked)
	}
	if crds != "" && (r.checked["Broker"] == 0 || r.checked["Trigger"] == 0 || r.checked["SinkBinding"] == 0) {
		t.Errorf("Eventing objects missing from the check: %v", r.checked)
	}
	if crds == "" {
		t.Skipf("%s is absent: %d Eventing objects were not checked against their CRD schemas (the Services were)", crdDir, r.skippedEventing)
	}
}

// The examples in deploy/examples (the nightly PingSource) are admitted as deploy/knative's
// objects are: against their CRD schemas, under the serving config deploy/knative declares.
func TestExamplesAreAdmitted(t *testing.T) {
	crds := crdsIfPresent()
	if crds == "" {
		t.Skipf("%s is absent: the examples are Eventing objects, checked only against their CRD schemas", crdDir)
	}
	servingConfig, err := admission.ServingConfigIn(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := admission.New(admission.Options{ServingConfig: servingConfig, CRDDir: crds})
	if err != nil {
		t.Fatal(err)
	}
	objects, err := readManifests(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	pings := 0
	for _, o := range objects {
		out, err := v.Validate(context.Background(), o.JSON)
		if err != nil {
			t.Errorf("%s: %v", o.File, err)
			continue
		}
		if strings.HasPrefix(out.How, "not checked") {
			t.Errorf("%s: %s: %s", o.File, out.Object, out.How)
		}
		if metaOf(o).is("sources.knative.dev/v1", "PingSource", "") {
			pings++
		}
	}
	if pings == 0 {
		t.Fatal("no PingSource among the examples")
	}
}

// The directory check catches the defects of issue 15 in a directory like deploy/knative, and
// judges a PVC mount by the config-features that directory declares.
func TestManifestDirectoryWithDefectsIsRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("fn.yaml", `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: fn, namespace: lensfn}
spec:
  template:
    spec:
      containers:
        - image: ko://github.com/lensfn/lensfn/functions/fn/cmd/fn
          env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: lensfn-data}}]
`)
	write("trigger.yaml", `
apiVersion: eventing.knative.dev/v1
kind: Trigger
metadata: {name: t, namespace: lensfn}
spec:
  broker: lensfn
  subscriber: {ref: {apiVersion: serving.knative.dev/v1, kind: Service, name: fn}, url: /events}
`)
	r, err := admitDir(dir, crdsIfPresent())
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(r.problems, "\n")
	for _, want := range []string{"fieldRef", "Kubernetes default value is insecure", "Persistent volume claim support is disabled"} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem mentions %q:\n%s", want, all)
		}
	}
	if crdsIfPresent() != "" && !strings.Contains(all, "additional properties 'url' not allowed") {
		t.Errorf("the Trigger's unknown field was not found:\n%s", all)
	}

	// Declaring the features in the directory admits the mount; the rest is still refused.
	write("config-features.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: config-features, namespace: knative-serving}
data:
  kubernetes.podspec-persistent-volume-claim: enabled
  kubernetes.podspec-persistent-volume-write: enabled
`)
	if r, err = admitDir(dir, crdsIfPresent()); err != nil {
		t.Fatal(err)
	}
	all = strings.Join(r.problems, "\n")
	if strings.Contains(all, "Persistent volume") || !strings.Contains(all, "fieldRef") {
		t.Errorf("with the features declared, want only the other defects:\n%s", all)
	}
}

func declaredServingConfig(t *testing.T) map[string]map[string]string {
	t.Helper()
	sc, err := admission.ServingConfigIn(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// config-features declares exactly what the Services need: without any one of its keys, some
// Service is refused.
func TestEveryDeclaredFeatureIsNeeded(t *testing.T) {
	declared := declaredServingConfig(t)
	features := declared["config-features"]
	if len(features) == 0 {
		t.Fatalf("%s declares no config-features for knative-serving", deployDir)
	}
	var services [][]byte
	for _, o := range manifests(t) {
		if metaOf(o).is("serving.knative.dev/v1", "Service", "") {
			services = append(services, o.JSON)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(features)) {
		without := maps.Clone(declared)
		without["config-features"] = maps.Clone(features)
		delete(without["config-features"], key)
		v, err := admission.New(admission.Options{ServingConfig: without})
		if err != nil {
			t.Fatal(err)
		}
		needed := false
		for _, s := range services {
			if _, err := v.Validate(context.Background(), s); err != nil {
				needed = true
			}
		}
		if !needed {
			t.Errorf("config-features declares %s: %s, but every Service is admitted without it: remove it", key, features[key])
		}
	}
}

// Without the downward API, a POD_NAMESPACE a Service passes is a literal: it must be the
// namespace the Service is created in.
func TestPodNamespaceIsTheServicesOwn(t *testing.T) {
	for _, o := range manifests(t) {
		if !metaOf(o).is("serving.knative.dev/v1", "Service", "") {
			continue
		}
		var svc struct {
			Metadata struct{ Namespace string }
			Spec     struct {
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
		for _, c := range svc.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "POD_NAMESPACE" && e.Value != svc.Metadata.Namespace {
					t.Errorf("%s: POD_NAMESPACE is %q, but the Service is in %q", o.File, e.Value, svc.Metadata.Namespace)
				}
			}
		}
	}
}
