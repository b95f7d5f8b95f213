package knativeadmission

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"knative.dev/pkg/apis"
	webhookjson "knative.dev/pkg/webhook/json"
	"knative.dev/serving/pkg/apis/config"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	asconfig "knative.dev/serving/pkg/autoscaler/config"
	"sigs.k8s.io/yaml"
)

// ServingNamespace is where Knative Serving reads its ConfigMaps.
const ServingNamespace = "knative-serving"

// External lists the *.knative.dev kinds from outside Knative core whose CRD is not among the
// stored schemas: their metadata is checked, their spec is not (Outcome.How says so).
var External = map[schema.GroupKind]string{
	{Group: "sinks.knative.dev", Kind: "RedisStreamSink"}: "knative-extensions/eventing-redis; its CRD is not among the stored knative-crds",
}

// ErrNoSchemas: the Validator was built without CRD schemas, so it cannot check an Eventing object.
var ErrNoSchemas = errors.New("admission: no CRD schemas were loaded")

// Options configure a Validator.
type Options struct {
	// ServingConfig holds the data of the knative-serving ConfigMaps the cluster has, by name:
	// config-features, config-defaults, config-autoscaler. A missing one has Knative's defaults.
	ServingConfig map[string]map[string]string
	// CRDDir is a folder of CustomResourceDefinition YAML files (../shared/reference/knative-crds)
	// for the Eventing objects. Empty: Services are still validated by Knative's code and by the
	// Service CRD this package embeds; Eventing objects fail with ErrNoSchemas.
	CRDDir string
}

// Validator checks objects as a Knative cluster would admit them on create. It is safe for
// concurrent use.
type Validator struct {
	serving        *config.Config
	serviceSchemas *crdSchemas // the embedded Service CRD of knative.dev/serving v0.42.2
	schemas        *crdSchemas // nil without Options.CRDDir
}

// Outcome says what was checked for one object that passed.
type Outcome struct {
	Object string // "Kind namespace/name"
	How    string // what it was checked with; "not checked: ..." for an External kind
}

// Rejection is an object that a cluster would refuse or warn about, with every reason.
type Rejection struct {
	Object   string
	Findings []string // "error: ..." or "warning: ..."
}

func (r *Rejection) Error() string {
	return r.Object + " is not admitted cleanly:\n  " + strings.Join(r.Findings, "\n  ")
}

// New builds a Validator. The serving ConfigMaps are parsed with Knative's own constructors, so a
// value Knative's config webhook would refuse fails here.
func New(opts Options) (*Validator, error) {
	cfg, err := servingConfig(opts.ServingConfig)
	if err != nil {
		return nil, err
	}
	v := &Validator{serving: cfg}
	if v.serviceSchemas, err = embeddedServiceSchema(); err != nil {
		return nil, err
	}
	if opts.CRDDir != "" {
		if v.schemas, err = loadCRDSchemas(opts.CRDDir); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func servingConfig(maps map[string]map[string]string) (*config.Config, error) {
	for name := range maps {
		if name != config.FeaturesConfigName && name != config.DefaultsConfigName && name != asconfig.ConfigName {
			return nil, fmt.Errorf("admission: %s is not a ConfigMap the serving webhook reads", name)
		}
	}
	data := func(name string) map[string]string {
		if d, ok := maps[name]; ok && d != nil {
			return d
		}
		return map[string]string{}
	}
	features, err := config.NewFeaturesConfigFromMap(data(config.FeaturesConfigName))
	if err != nil {
		return nil, fmt.Errorf("admission: %s: %w", config.FeaturesConfigName, err)
	}
	if err := knownFlags(data(config.FeaturesConfigName)); err != nil {
		return nil, fmt.Errorf("admission: %s: %w", config.FeaturesConfigName, err)
	}
	defaults, err := config.NewDefaultsConfigFromMap(data(config.DefaultsConfigName))
	if err != nil {
		return nil, fmt.Errorf("admission: %s: %w", config.DefaultsConfigName, err)
	}
	autoscaler, err := asconfig.NewConfigFromMap(data(asconfig.ConfigName))
	if err != nil {
		return nil, fmt.Errorf("admission: %s: %w", asconfig.ConfigName, err)
	}
	return &config.Config{Features: features, Defaults: defaults, Autoscaler: autoscaler}, nil
}

// knownFlags refuses what Knative would silently ignore in config-features: a key it does not
// know or a value that is not enabled, allowed or disabled (it keeps the default then).
func knownFlags(data map[string]string) error {
	for key, value := range data {
		if strings.HasPrefix(key, "_") { // _example: Knative's documentation block
			continue
		}
		if !slices.ContainsFunc([]config.Flag{config.Enabled, config.Allowed, config.Disabled}, func(f config.Flag) bool {
			return strings.EqualFold(value, string(f))
		}) {
			return fmt.Errorf("%s: %q is not enabled, allowed or disabled, so Knative would ignore it", key, value)
		}
		on, _ := config.NewFeaturesConfigFromMap(map[string]string{key: string(config.Enabled)})
		off, _ := config.NewFeaturesConfigFromMap(map[string]string{key: string(config.Disabled)})
		if *on == *off {
			return fmt.Errorf("%s is not a feature Knative Serving knows, so it would be ignored", key)
		}
	}
	return nil
}

// Documents splits a YAML stream into its objects as JSON, dropping empty documents. A duplicate
// key or a YAML error fails.
func Documents(raw []byte) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(docs)+1, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue
		}
		docs = append(docs, js)
	}
}

// ManifestFiles returns the YAML files under dir, sorted.
func ManifestFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// Manifest is one object of a manifest file.
type Manifest struct {
	File string // relative to the folder read
	JSON []byte
}

// ReadManifests returns every object of every YAML file under dir, in file order.
func ReadManifests(dir string) ([]Manifest, error) {
	files, err := ManifestFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		docs, err := Documents(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		rel, _ := filepath.Rel(dir, file)
		for _, d := range docs {
			out = append(out, Manifest{File: rel, JSON: d})
		}
	}
	return out, nil
}

// ServingConfigIn collects the knative-serving ConfigMaps (config-features, config-defaults,
// config-autoscaler) that the manifests under dir declare, for Options.ServingConfig.
func ServingConfigIn(dir string) (map[string]map[string]string, error) {
	objects, err := ReadManifests(dir)
	if err != nil {
		return nil, err
	}
	maps := map[string]map[string]string{}
	for _, o := range objects {
		var cm corev1.ConfigMap
		if err := json.Unmarshal(o.JSON, &cm); err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		if cm.APIVersion == "v1" && cm.Kind == "ConfigMap" && cm.Namespace == ServingNamespace && servingConfigName(cm.Name) {
			if _, dup := maps[cm.Name]; dup {
				return nil, fmt.Errorf("%s: %s/%s is declared twice", o.File, ServingNamespace, cm.Name)
			}
			maps[cm.Name] = cm.Data
		}
	}
	return maps, nil
}

func servingConfigName(name string) bool {
	return name == config.FeaturesConfigName || name == config.DefaultsConfigName || name == asconfig.ConfigName
}

// typeMeta is what every object starts with.
type typeMeta struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   json.RawMessage `json:"metadata"`
}

var servingService = servingv1.SchemeGroupVersion.WithKind("Service")

// Validate checks one object, given as JSON or YAML, the way a cluster with this Validator's
// configuration admits it on create. A *Rejection lists every reason it would not be admitted
// cleanly (warnings included).
func (v *Validator) Validate(ctx context.Context, object []byte) (Outcome, error) {
	js, err := yaml.YAMLToJSONStrict(object) // JSON is YAML: this also takes JSON
	if err != nil {
		return Outcome{}, &Rejection{Object: "an object", Findings: []string{"error: " + err.Error()}}
	}
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return Outcome{}, &Rejection{Object: "an object", Findings: []string{"error: not a Kubernetes object: " + err.Error()}}
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil || tm.APIVersion == "" || tm.Kind == "" {
		return Outcome{}, &Rejection{Object: "an object", Findings: []string{fmt.Sprintf("error: apiVersion %q and kind %q do not name a type", tm.APIVersion, tm.Kind)}}
	}
	gvk := gv.WithKind(tm.Kind)
	meta, metaErr := strictObjectMeta(tm.Metadata)
	out := Outcome{Object: tm.Kind + " " + strings.TrimPrefix(meta.Namespace+"/"+meta.Name, "/")}
	r := &Rejection{Object: out.Object}
	if metaErr != nil {
		r.Findings = append(r.Findings, "error: metadata: "+metaErr.Error())
	}

	var how string
	switch {
	case gvk == servingService:
		how = "Knative Serving's SetDefaults and Validate and its CRD schema"
		r.Findings = append(r.Findings, v.service(ctx, js)...)
		r.Findings = append(r.Findings, v.serviceSchemas.validate(gvk, js)...)
	case External[gvk.GroupKind()] != "":
		how = "not checked: " + External[gvk.GroupKind()]
	case gv.Group == "knative.dev" || strings.HasSuffix(gv.Group, ".knative.dev"):
		if v.schemas == nil {
			return out, fmt.Errorf("%s: %w", out.Object, ErrNoSchemas)
		}
		how = "its CRD schema"
		r.Findings = append(r.Findings, v.schemas.validate(gvk, js)...)
		if gvk.Kind == "JobSink" {
			how += "; its job decoded strictly into batch/v1 Job"
			r.Findings = append(r.Findings, jobSinkJob(js)...)
		}
	case builtins.Recognizes(gvk):
		how = "strict decoding into its k8s.io/api type"
		obj, findings := strictKubernetes(js)
		r.Findings = append(r.Findings, findings...)
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Namespace == ServingNamespace && servingConfigName(cm.Name) {
			how += " and Knative's config constructor"
			if _, err := servingConfig(map[string]map[string]string{cm.Name: cm.Data}); err != nil {
				r.Findings = append(r.Findings, "error: "+err.Error())
			}
		}
	default:
		r.Findings = append(r.Findings, fmt.Sprintf("error: no check knows %s (not Knative, not a Kubernetes kind of core/v1, apps/v1, batch/v1 or rbac.authorization.k8s.io/v1, not listed in External)", gvk))
	}
	if len(r.Findings) > 0 {
		return out, r
	}
	out.How = how
	return out, nil
}

// strictObjectMeta decodes metadata rejecting unknown fields, as the API server's strict field
// validation does, and requires a name.
func strictObjectMeta(raw json.RawMessage) (metav1.ObjectMeta, error) {
	var meta metav1.ObjectMeta
	if len(raw) == 0 {
		return meta, errors.New("missing")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		return meta, err
	}
	if meta.Name == "" && meta.GenerateName == "" {
		return meta, errors.New("name is required")
	}
	return meta, nil
}

// service runs the serving webhook's path for a create: strict decode, SetDefaults under the
// configured ConfigMaps, Validate; errors and warnings both become findings.
func (v *Validator) service(ctx context.Context, js []byte) []string {
	var svc servingv1.Service
	if err := webhookjson.Decode(js, &svc, true); err != nil {
		return []string{"error: decoding into serving.knative.dev/v1 Service: " + err.Error()}
	}
	ctx = config.ToContext(ctx, v.serving)
	ctx = apis.WithUserInfo(ctx, &authenticationv1.UserInfo{Username: "lensfn-admission-check"})
	ctx = apis.WithinCreate(ctx)
	svc.SetDefaults(ctx)
	fe := svc.Validate(ctx)
	if fe == nil {
		return nil
	}
	var findings []string
	for _, e := range fe.Filter(apis.ErrorLevel).WrappedErrors() {
		findings = append(findings, "error: "+e.Error())
	}
	for _, w := range fe.Filter(apis.WarningLevel).WrappedErrors() {
		findings = append(findings, "warning: "+w.Error())
	}
	return findings
}

// builtins are the Kubernetes API groups a Lensfn manifest uses (core: Namespace, ConfigMap,
// Secret, PVC, Service; apps: StatefulSet, Deployment; batch: a JobSink's Job; rbac: the
// target cluster's grant to the deployer's identity, deploy/examples/target-cluster-rbac.yaml), the ones Knative
// Serving's types already import. client-go's full scheme would compile every API group of
// Kubernetes into the deployer for kinds no manifest has; another kind fails as unknown.
var builtins = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registration of generated types
		}
	}
	return s
}()

var strictCodecs = serializer.NewCodecFactory(builtins, serializer.EnableStrict)

// strictKubernetes decodes a built-in object rejecting unknown and duplicate fields and wrong types.
func strictKubernetes(js []byte) (runtime.Object, []string) {
	obj, _, err := strictCodecs.UniversalDeserializer().Decode(js, nil, nil)
	if err != nil {
		return nil, []string{"error: " + err.Error()}
	}
	return obj, nil
}

// jobSinkJob: a JobSink's spec.job is a whole batch/v1 Job that the CRD schema leaves open.
func jobSinkJob(js []byte) []string {
	var sink struct {
		Spec struct {
			Job json.RawMessage `json:"job"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(js, &sink); err != nil || len(sink.Spec.Job) == 0 {
		return nil // the schema check reports a malformed spec
	}
	var job map[string]any
	if err := json.Unmarshal(sink.Spec.Job, &job); err != nil {
		return []string{"error: spec.job: " + err.Error()}
	}
	job["apiVersion"], job["kind"] = "batch/v1", "Job"
	if _, ok := job["metadata"]; !ok {
		job["metadata"] = map[string]any{}
	}
	raw, _ := json.Marshal(job)
	if _, findings := strictKubernetes(raw); findings != nil {
		return []string{"error: spec.job: " + strings.TrimPrefix(findings[0], "error: ")}
	}
	return nil
}
