// Package knativeadmission checks Kubernetes objects the way a Knative cluster admits them, before any
// cluster sees them, so that a manifest or an object a deployer is about to create fails here
// instead of at `kubectl apply`:
//
//   - a serving.knative.dev/v1 Service is decoded strictly (unknown fields fail) into
//     knative.dev/serving's v1.Service, checked against the Service CRD schema (embedded: the
//     module's own config/core/300-resources/service.yaml), defaulted and
//     validated with Knative's own SetDefaults and Validate under a given config-features (and
//     config-defaults, config-autoscaler), exactly as the serving webhook does on create; its
//     warnings (the "Kubernetes default value is insecure" securityContext ones) count as failures;
//   - every other *.knative.dev object (Broker, Trigger, SinkBinding, PingSource, JobSink, ...) is
//     validated against the openAPIV3Schema of its CRD (../shared/reference/knative-crds), made
//     strict the way the API server's strict field validation is: unknown fields, types and
//     required fields; a JobSink's job is also decoded strictly into a batch/v1 Job;
//   - a Kubernetes object of core/v1, apps/v1 or batch/v1 (Namespace, ConfigMap, Secret, PVC,
//     StatefulSet, ...) is decoded strictly into its k8s.io/api type; Knative's own ConfigMaps in knative-serving are parsed
//     with Knative's constructors, as its config webhook does;
//   - metadata is decoded strictly into ObjectMeta for every object; any other kind fails unless
//     it is listed in External (a CRD from outside Knative core whose schema is not stored here).
//
// Users: the deployer's knative provider checks every Service it is about to create (so a
// rendered object a cluster would refuse fails before any API call), and tests/knative checks
// every manifest of deploy/knative. It may import knative.dev/serving, knative.dev/pkg (apis,
// webhook/json), k8s.io/api (core, apps, batch, authentication) and apimachinery, sigs.k8s.io/yaml and the JSON
// Schema validator (santhosh-tekuri/jsonschema, golang.org/x/text for its messages); nothing of
// ours.
package knativeadmission
