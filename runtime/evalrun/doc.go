// Package evalrun owns the benchmark run record shared by the evaluation functions
// (evaluation-api, benchmark-runner): its JSON document as spec/evaluation-api.txt shows it, its
// place in the state store (kind, statuses, transitions, indexed attributes), its sealed API key,
// its artifact folder, the validation and defaults of a run request, the timing estimate
// (reference/lens-evaluation.md §1) and the result shapes of §5 (metrics, SLA verdict, goodput).
//
// A run's document is kept as a map of raw JSON values, so every stored field survives a read
// unchanged: fields a request left out stay absent, explicit nulls stay null, and fields written
// by a newer version of Lensfn are preserved by an older one. View lists the document's public
// fields as Go types: the evaluation API's OpenAPI schema of a run is generated from it.
//
// It may import runtime/rawjson (the run document), runtime/problem, runtime/state, runtime/secret,
// runtime/recordrepo, runtime/loadgen (the per-request Record), runtime/livesummary (the live
// summary a running run shows), runtime/enginemodel (the registered accelerator profiles: its
// hardware catalogue) and events.
package evalrun
