// Package knative checks deploy/knative the way a Knative cluster admits it: every object of every
// manifest file goes through package admission (Services through Knative Serving's own defaulting
// and validation under the config-features the directory declares, Eventing objects through their
// CRD schemas from ../shared/reference/knative-crds), every declared feature must be needed, and
// the kn scripts must apply exactly those manifests: a kn flag that would change a Service or a
// Trigger away from its validated manifest fails.
//
// It is its own module (tests/knative/go.mod) because knative.dev/serving v0.42.2 needs a newer
// knative.dev/pkg than the main module's; `make test` runs it. It imports admission and nothing of
// the main module: it reads the repository's files.
package knative
