// Package workflow owns the evaluation workflow record (reference/lens-evaluation.md §3-§4): the
// simple deploy-then-benchmark workflow-runs and the multi-configuration evaluations with their
// cases, kept as raw JSON fields so every stored field survives a read-modify-write; the
// workflow and case statuses and their transition tables; case generation from an evaluation
// request (ids, de-duplication, baseline types, baseline_parameters, the P/D budget rule); and
// the retry reset rules; View and CaseView, the public fields of a workflow and a case as Go
// types (the evaluation API's OpenAPI schemas are generated from them); and the progress stream (every status change of the workflow and of its
// cases, each with a log line, appended by Repo on create and update). evaluation-api creates,
// cancels, retries and deletes workflows through it and streams the progress;
// workflow-orchestrator advances them.
//
// It may import events, runtime/rawjson (the raw documents), runtime/evalrun (timestamps,
// benchmark validation), runtime/comparison (the report), runtime/deployconfig,
// runtime/inventory, runtime/problem and runtime/state.
package workflow
