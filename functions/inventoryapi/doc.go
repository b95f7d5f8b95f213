// Package inventoryapi is the inventory-api function: the routes of the records an evaluation
// refers to, which the evaluation spec names without defining them. /api/cluster registers
// clusters (kubeconfigs with inline credentials only, by runtime/kubeconfig's rule, sealed and
// never returned) and opens their sessions; /api/v1/deployments
// registers existing OpenAI-compatible endpoints as deployment executions after probing their
// model list; /api/v1/model-services publishes a model name over member executions behind an
// access key shown once and stored as a hash, and probes the members on an interval in the
// background (one instance at a time, under a store lease) to elect the active member;
// /api/v1/configurations stores deployable configuration artifacts with their checksum.
//
// The records themselves, their storage and their rules live in runtime/inventory, which the
// evaluation functions use too. It may import runtime/fn, runtime/auth, runtime/openapi, runtime/apiroute, runtime/problem,
// runtime/deployconfig (the provider refs its document lists),
// runtime/state, runtime/inventory, runtime/kubeconfig and runtime/evalrun (whether a use's run has ended, so a use
// a stopped process left behind does not block a delete), and prometheus/client_golang; nothing imports it but its
// cmd and tests/.
package inventoryapi
