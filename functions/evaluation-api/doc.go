// Package evaluationapi is the evaluation-api function: the /api/v1/evaluate routes of
// spec/evaluation-api.txt for benchmark runs. It answers the benchmark defaults and the timing
// estimate (a pure function of the configuration), creates runs (validated, resolved against the
// inventory's deployment executions or Model Services, their key sealed, stored queued and
// announced with dev.lensfn.evaluation.run.queued.v1), lists, reads, cancels and deletes them.
// It also consumes dev.lensfn.evaluation.run.requested.v1 and creates a run from it exactly as
// POST /runs does, once per idempotency key, so a PingSource or a CI system can schedule
// benchmarks. The benchmark-runner stage executes the runs.
//
// It may import events, runtime/fn, runtime/auth, runtime/cloudevent, runtime/problem,
// runtime/state, runtime/egress, runtime/inventory and runtime/evalrun.
package evaluationapi
