package knativeadmission_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admission "github.com/lensfn/lensfn/runtime/knativeadmission"
)

// crdDir is <shared>/reference/knative-crds: LENS_SHARED_DIR, default ../shared beside the
// repository.
var crdDir = filepath.Join(sharedDir(), "reference", "knative-crds")

func sharedDir() string {
	if dir := os.Getenv("LENS_SHARED_DIR"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "..", "shared")
}

var pvcFeatures = map[string]string{
	"kubernetes.podspec-persistent-volume-claim": "enabled",
	"kubernetes.podspec-persistent-volume-write": "enabled",
}

func newValidator(t *testing.T, features map[string]string, withCRDs bool) *admission.Validator {
	t.Helper()
	opts := admission.Options{ServingConfig: map[string]map[string]string{"config-features": features}}
	if withCRDs {
		if _, err := os.Stat(crdDir); err != nil {
			t.Skipf("%s is absent, so the CRD schema checks are skipped", crdDir)
		}
		opts.CRDDir = crdDir
	}
	v, err := admission.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// restrictedContainer is a container the serving webhook has nothing to say about.
const restrictedContainer = `
        - image: ko://github.com/lensfn/lensfn/functions/x/cmd/x
          securityContext:
            runAsNonRoot: true
            allowPrivilegeEscalation: false
            capabilities: {drop: [ALL]}
            seccompProfile: {type: RuntimeDefault}`

func service(spec string) string {
	return `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: x, namespace: lensfn}
spec:
  template:
    spec:
      containers:` + spec
}

// findings validates one object and returns its rejection's findings (nil when admitted).
func findings(t *testing.T, v *admission.Validator, object string) []string {
	t.Helper()
	_, err := v.Validate(context.Background(), []byte(object))
	if err == nil {
		return nil
	}
	var r *admission.Rejection
	if !errors.As(err, &r) {
		t.Fatalf("want a *Rejection, got %v", err)
	}
	return r.Findings
}

func wantFinding(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no finding contains %q; findings:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
}

// The defects of issue 15, in memory: a fieldRef and no securityContext must fail, with Knative's
// own messages, and the restricted version of the same Service must pass.
func TestServiceWithFieldRefAndNoSecurityContextIsRejected(t *testing.T) {
	v := newValidator(t, nil, false)
	got := findings(t, v, service(`
        - image: ko://github.com/lensfn/lensfn/functions/x/cmd/x
          env:
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}`))
	wantFinding(t, got,
		"error: must not set the field(s): spec.template.spec.containers[0].env[0].valueFrom.fieldRef",
		"warning: Kubernetes default value is insecure",
		"securityContext.runAsNonRoot", "securityContext.allowPrivilegeEscalation",
		"securityContext.capabilities", "securityContext.seccompProfile")

	if got := findings(t, v, service(restrictedContainer)); got != nil {
		t.Fatalf("the restricted Service is refused: %v", got)
	}
}

// Warnings alone fail: the webhook would admit the object, but with a warning nobody reads.
func TestWarningsAloneFail(t *testing.T) {
	v := newValidator(t, nil, false)
	got := findings(t, v, service(strings.Replace(restrictedContainer, "capabilities: {drop: [ALL]}", "capabilities: {drop: [all]}", 1)))
	if len(got) != 1 || !strings.HasPrefix(got[0], "warning: ") || !strings.Contains(got[0], "Must be spelled as 'ALL'") {
		t.Fatalf("findings = %q, want the one misspelled-ALL warning", got)
	}
}

// A PVC mount is judged under the features given, exactly: refused by default, refused
// read-write with only the claim feature, admitted with both.
func TestPVCMountNeedsTheDeclaredFeatures(t *testing.T) {
	pvc := service(restrictedContainer + `
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: lensfn-data}}]`)
	wantFinding(t, findings(t, newValidator(t, nil, false), pvc),
		"Persistent volume claim support is disabled", "Persistent volume write support is disabled")
	claimOnly := map[string]string{"kubernetes.podspec-persistent-volume-claim": "enabled"}
	got := findings(t, newValidator(t, claimOnly, false), pvc)
	wantFinding(t, got, "Persistent volume write support is disabled")
	if got := findings(t, newValidator(t, pvcFeatures, false), pvc); got != nil {
		t.Fatalf("refused with both features: %v", got)
	}
}

func TestServiceUnknownFieldsAndTypesFail(t *testing.T) {
	v := newValidator(t, nil, false)
	cases := []struct{ name, object, want string }{
		{"unknown container field", service(restrictedContainer + "\n          envs: [{name: A, value: b}]"), `unknown field "envs"`},
		{"unknown spec field", strings.Replace(service(restrictedContainer), "  template:", "  templates: {}\n  template:", 1), `unknown field "templates"`},
		{"wrong type", service(restrictedContainer + "\n          args: --model"), "cannot unmarshal string"},
		{"unknown metadata field", strings.Replace(service(restrictedContainer), "namespace: lensfn", "namespace: lensfn, label: {a: b}", 1), `metadata: json: unknown field "label"`},
		{"no name", strings.Replace(service(restrictedContainer), "name: x, ", "", 1), "name is required"},
		{"duplicate key", service(restrictedContainer + "\n          image: other"), "already set in map"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantFinding(t, findings(t, v, tc.object), tc.want) })
	}
}

// The serving ConfigMaps are parsed with Knative's constructors, as its config webhook does.
func TestServingConfigParsedLikeKnative(t *testing.T) {
	_, err := admission.New(admission.Options{ServingConfig: map[string]map[string]string{
		"config-features": {"kubernetes.podspec-persistent-volume-claim": "on"}}})
	if err == nil {
		t.Fatal("a config-features value Knative refuses was accepted")
	}
	if _, err := admission.New(admission.Options{ServingConfig: map[string]map[string]string{
		"config-features": {"kubernetes.podspec-persistent-volume-clam": "enabled"}}}); err == nil {
		t.Fatal("a feature Knative does not know (and would ignore) was accepted")
	}
	if _, err := admission.New(admission.Options{ServingConfig: map[string]map[string]string{"config-network": {}}}); err == nil {
		t.Fatal("a ConfigMap the serving webhook does not read was accepted")
	}
	v := newValidator(t, nil, false)
	wantFinding(t, findings(t, v, `
apiVersion: v1
kind: ConfigMap
metadata: {name: config-defaults, namespace: knative-serving}
data: {revision-timeout-seconds: "soon"}`), "config-defaults")
}

func TestKubernetesObjectsDecodeStrictly(t *testing.T) {
	v := newValidator(t, nil, false)
	pvc := `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: lensfn-data, namespace: lensfn}
spec:
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 50Gi}}`
	if got := findings(t, v, pvc); got != nil {
		t.Fatalf("a valid PVC is refused: %v", got)
	}
	wantFinding(t, findings(t, v, strings.Replace(pvc, "accessModes", "accessMode", 1)), `unknown field "spec.accessMode"`)
	wantFinding(t, findings(t, v, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}`), "no check knows example.com/v1, Kind=Widget")
}

// Eventing objects against their CRD schemas: unknown fields, types and required fields.
func TestEventingObjectsAgainstTheirCRDSchemas(t *testing.T) {
	v := newValidator(t, nil, true)
	trigger := `
apiVersion: eventing.knative.dev/v1
kind: Trigger
metadata: {name: t, namespace: lensfn}
spec:
  broker: lensfn
  filter: {attributes: {type: dev.lensfn.x.v1}}
  subscriber:
    ref: {apiVersion: serving.knative.dev/v1, kind: Service, name: x}
    uri: /events`
	pingSource := `
apiVersion: sources.knative.dev/v1
kind: PingSource
metadata: {name: p, namespace: lensfn}
spec:
  schedule: "*/5 * * * *"
  data: '{"tick":true}'
  sink: {ref: {apiVersion: eventing.knative.dev/v1, kind: Broker, name: lensfn}}`
	jobSink := `
apiVersion: sinks.knative.dev/v1alpha1
kind: JobSink
metadata: {name: j, namespace: lensfn}
spec:
  job:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: main, image: ko://github.com/lensfn/lensfn/functions/x/cmd/x}]`
	cases := []struct{ name, object, want string }{
		{"trigger", trigger, ""},
		{"ping source", pingSource, ""},
		{"job sink", jobSink, ""},
		// Trigger.spec itself preserves unknown fields (for experimental features); its parts do not.
		{"trigger unknown field", strings.Replace(trigger, "uri: /events", "uri: /events\n    urii: /events", 1), "at /spec/subscriber: additional properties 'urii' not allowed"},
		{"trigger wrong type", strings.Replace(trigger, "broker: lensfn", "broker: 5", 1), "at /spec/broker: got number, want string"},
		{"trigger wrong apiVersion", strings.Replace(trigger, "eventing.knative.dev/v1", "eventing.knative.dev/v2", 1), "no CRD schema for eventing.knative.dev/v2, Kind=Trigger"},
		{"ping source sink as a string", strings.Replace(pingSource, "sink: {ref: {apiVersion: eventing.knative.dev/v1, kind: Broker, name: lensfn}}", "sink: broker:lensfn", 1), "at /spec/sink: got string, want object"},
		{"api server source without resources", `
apiVersion: sources.knative.dev/v1
kind: ApiServerSource
metadata: {name: a, namespace: lensfn}
spec:
  sink: {ref: {apiVersion: eventing.knative.dev/v1, kind: Broker, name: lensfn}}`, "at /spec: missing property 'resources'"},
		{"job sink job unknown field", strings.Replace(jobSink, "restartPolicy: Never", "restartPolicy: Never\n          restartPolicyy: Never", 1), `spec.job: strict decoding error: unknown field "spec.template.spec.restartPolicyy"`},
		{"broker delivery retry as a string", `
apiVersion: eventing.knative.dev/v1
kind: Broker
metadata: {name: lensfn, namespace: lensfn}
spec: {delivery: {retry: "5"}}`, "at /spec/delivery/retry: got string, want integer"},
		{"kind without a stored CRD", `
apiVersion: messaging.knative.dev/v1
kind: Channel
metadata: {name: c, namespace: lensfn}`, "no CRD schema for messaging.knative.dev/v1, Kind=Channel"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := findings(t, v, tc.object)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			wantFinding(t, got, tc.want)
		})
	}
}

func TestExternalKindIsReportedNotChecked(t *testing.T) {
	v := newValidator(t, nil, true)
	out, err := v.Validate(context.Background(), []byte(`
apiVersion: sinks.knative.dev/v1alpha1
kind: RedisStreamSink
metadata: {name: dead-letters, namespace: lensfn}
spec: {address: "redis:6379", stream: s}`))
	if err != nil || !strings.HasPrefix(out.How, "not checked: ") {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
}

func TestEventingObjectWithoutSchemasIsAnError(t *testing.T) {
	v := newValidator(t, nil, false)
	_, err := v.Validate(context.Background(), []byte(`
apiVersion: eventing.knative.dev/v1
kind: Broker
metadata: {name: lensfn, namespace: lensfn}`))
	if !errors.Is(err, admission.ErrNoSchemas) {
		t.Fatalf("err = %v, want ErrNoSchemas", err)
	}
}
