// Package evaluationapi is the evaluation-api function: the /api/v1/evaluate routes of
// spec/evaluation-api.txt for benchmark runs. It answers the benchmark defaults and the timing
// estimate (a pure function of the configuration), creates runs (validated, resolved against the
// inventory's deployment executions or Model Services, their key sealed, stored queued and
// announced with dev.lensfn.evaluation.run.queued.v1), lists, reads, cancels and deletes them, streams a run's status, progress, live metrics and log
// lines as Server-Sent Events (GET /runs/{id}/events, resumable with Last-Event-ID) from the
// run's progress stream, which runtime/evalrun appends to on every write.
// It also consumes dev.lensfn.evaluation.run.requested.v1 and creates a run from it exactly as
// POST /runs does, once per idempotency key, so a PingSource or a CI system can schedule
// benchmarks. The benchmark-runner stage executes the runs.
//
// It serves the workflow routes too (POST /workflow-runs and /evaluations, list, get, details,
// events, the report-html artifact, retry, cancel, case cancel, delete) over runtime/workflow's
// records, and consumes
// dev.lensfn.evaluation.requested.v1 to create an evaluation as POST /evaluations does; it
// announces workflows with dev.lensfn.evaluation.workflow.queued.v1 and the
// workflow-orchestrator stage carries them out.
//
// It may import events, runtime/fn, runtime/auth, runtime/cloudevent, runtime/problem,
// runtime/state, runtime/sse, runtime/openapi, runtime/apiroute, runtime/report/runreport, runtime/egress,
// runtime/inventory, runtime/evalrun, runtime/rawjson, runtime/deployconfig, runtime/workflow, runtime/comparison
// and runtime/report/comparisonreport.
package evaluationapi
