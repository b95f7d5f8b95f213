// Package knative is the deployer's knative provider (cluster sessions of kind kubernetes): one
// Knative Service per replica and a router Service in front, created through client-go's dynamic
// client built from the inline credentials of the session's kubeconfig alone (runtime/kubeconfig
// refuses any other kubeconfig before client-go sees it), each checked first with Knative Serving's own SetDefaults
// and Validate under the features deploy/knative declares and against the Service CRD schema, by
// runtime/knativeadmission: an object a cluster would refuse is never sent.
//
// Evidence (evidence.go) reads, with the same client and get/list only, what the cluster offers
// about a ready deployment: its Services' pods, their nodes' accelerator facts and the pods'
// Warning events, each part unavailable with the cluster's answer when refused.
//
// precise-prefix-cache-routing is refused (ErrLocalOnly): its router learns the replicas' KV
// caches from ZMQ events, which a Knative Service (one HTTP port, addressed by its URL, while the
// events name pod IPs) cannot carry, so on Knative it would silently route on load alone. The
// local provider runs it.
//
// It is a package of its own so that only the deployer command of the Knative image
// (functions/deployer/cmd/deployer) links it and the Kubernetes, apimachinery and Knative Serving
// trees it needs; the local stack's deployer (cmd/deployer-local) does not (#11).
//
// It may import functions/deployer, runtime/deployconfig, runtime/egress (the policy the
// cluster's server and every dial pass), runtime/inventory, runtime/kubeconfig and
// runtime/knativeadmission.
package knative
