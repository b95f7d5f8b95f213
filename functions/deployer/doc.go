// Package deployer is the deployer stage: it turns a deployable-configuration.v1 artifact into a
// running, health-probed endpoint recorded as a deployment execution with ownership
// `evaluation`, and removes it again. It consumes dev.lensfn.evaluation.deployment.requested.v1
// and ...deployment.cleanup.requested.v1 and answers with ...deployment.ready.v1,
// ...deployment.failed.v1 and ...deployment.cleaned.v1.
//
// Each deployment has a record on the state store (kind "deployment", id = the execution id the
// requester chose) holding what the provider created: the local provider's child processes (pid,
// start time, port) or the knative provider's Service names. Work on a deployment runs under the
// store lease "deployment:<id>"; every instance sweeps for deployments whose worker died (its
// lease expired), reaps what the dead worker started and carries on, so a killed deployer leaves
// nothing orphaned. Redelivered events find the record and answer from it.
//
// Providers: `local` (a cluster session of kind local: inference-sim replicas and an
// inference-router as child processes on loopback) and `knative` (kind kubernetes: Knative
// Services through client-go's dynamic client, each checked first with Knative Serving's own
// SetDefaults and Validate under the features deploy/knative declares and against the Service
// CRD schema, by runtime/knativeadmission: an object a cluster would refuse is never sent).
//
// It may import events, runtime/fn, runtime/cloudevent, runtime/state,
// runtime/problem, runtime/inventory, runtime/deployconfig, runtime/knativeadmission and
// runtime/promtargets.
package deployer
