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
// A provider that is an EvidenceGatherer (the knative one) has its platform's evidence stored on
// the execution at readiness and refreshed while runs use it (inventory.ClusterEvidence), so the
// benchmark runner's diagnostics include it without the cluster's credentials leaving here.
//
// Providers (each a ProviderFactory a command wires with Builder): `local` (a cluster session of
// kind local: inference-sim replicas and an inference-router as child processes on loopback),
// here, and `knative` (kind kubernetes: Knative Services), in functions/deployer/knative. The
// Knative image's command (cmd/deployer) has both; the local stack's (cmd/deployer-local) has
// the local one only, and a deployment its build has no provider for fails saying which build
// has it.
//
// It may import events, runtime/fn, runtime/cloudevent, runtime/state, runtime/leasedrun (the
// renewal of a deployment's lease, the sweeps' timer), runtime/problem, runtime/inventory,
// runtime/deployconfig, runtime/promtargets and runtime/secret (its redaction of recorded text,
// for the child-log excerpts in errors).
package deployer
