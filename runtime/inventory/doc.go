// Package inventory owns the records an evaluation refers to, which the evaluation spec names
// without defining their routes: clusters and their sessions, deployment executions (an
// OpenAI-compatible endpoint a run can target), Model Service groups (a published name in front
// of health-probed member executions, guarded by an access key) and deployable configuration
// artifacts. It keeps them on the state store with their secrets sealed (API keys, kubeconfigs)
// or hashed (access keys), so inventory-api, evaluation-api and the evaluation stages share one
// definition of their JSON shape, their keys and their rules.
//
// It also probes endpoints' model lists (ListModels, ProbeModel) for inventory-api and
// simulation-api, through a client the caller builds on the egress policy.
//
// It may import runtime/state, runtime/secret, runtime/problem, runtime/egress, runtime/deployconfig and
// runtime/kubeconfig (a cluster's kubeconfig is checked before it is stored), and github.com/google/uuid.
package inventory
