// Package workflow owns the evaluation workflow record (reference/lens-evaluation.md §3-§4): the
// simple deploy-then-benchmark workflow-runs and the multi-configuration evaluations with their
// cases, as typed structs (Workflow, Case) whose fields are the public document's: Opt keeps a
// field's three stored states (absent, null, a value), json.RawMessage keeps the blocks that are
// any JSON, and each record's Extra keeps the stored fields this version does not know (and
// any stored in another shape than its Go field's) and writes them back unchanged, so every
// stored field survives a read-modify-write (the
// evaluation API's OpenAPI schemas are generated from the two types); defaults are applied once,
// when NewEvaluation or NewSimple builds a workflow, and a record reads back as it was stored.
// It also owns the workflow and case statuses and their transition tables; case generation
// from an evaluation request (ids, de-duplication, baseline types, baseline_parameters, the P/D
// budget rule); the retry reset rules; and the progress stream (every status change of the
// workflow and of its cases, each with a log line, appended by Repo on create and update).
// evaluation-api creates, cancels, retries and deletes workflows through it and streams the
// progress; workflow-orchestrator advances them.
//
// It may import events, runtime/rawjson (its encoder), runtime/evalrun (timestamps,
// benchmark validation), runtime/comparison (the report), runtime/deployconfig,
// runtime/inventory, runtime/problem and runtime/state.
package workflow
