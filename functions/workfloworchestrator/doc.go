// Package workfloworchestrator is the workflow-orchestrator stage: the event-driven state
// machine that carries evaluation workflows (runtime/workflow) through deployment, benchmark,
// comparison and cleanup. It keeps nothing in memory between events: every event (and every
// sweep of its Start loop) reads the workflow from the store, decides the next step from the
// record alone, writes it under the record's version and only then acts (requests a
// deployment, creates a benchmark run, requests a cleanup, emits workflow.finished). Every act
// is idempotent (chosen ids, name-based run ids, checksum-found artifacts), so a killed
// orchestrator, a lost event or two instances racing leave nothing orphaned or doubled.
//
// It consumes dev.lensfn.evaluation.workflow.queued.v1, the deployer's deployment.ready,
// .failed and .cleaned, and run.finished; it emits deployment.requested,
// deployment.cleanup.requested, run.queued and dev.lensfn.evaluation.workflow.finished.v1.
//
// It may import events, runtime/fn, runtime/cloudevent, runtime/state, runtime/problem,
// runtime/secret, runtime/evalrun, runtime/rawjson, runtime/inventory, runtime/workflow and runtime/leasedrun
// (the sweep's timer).
package workfloworchestrator
