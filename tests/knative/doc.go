// Package knative checks deploy/knative the way a Knative cluster admits it: every object of every
// manifest file goes through runtime/knativeadmission (Services through Knative Serving's own defaulting
// and validation under the config-features the directory declares, Eventing objects through their
// CRD schemas from ../shared/reference/knative-crds), every declared feature must be needed, and
// the kn scripts must apply exactly those manifests: a kn flag that would change a Service or a
// Trigger away from its validated manifest fails.
//
// The admission code is runtime/knativeadmission, the same check the deployer's knative provider
// runs on every object before it creates it. This package reads the repository's files; as a
// test package it may import anything.
package knative
