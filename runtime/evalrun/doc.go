// Package evalrun owns the benchmark run record shared by the evaluation functions
// (evaluation-api, benchmark-runner): its JSON document as spec/evaluation-api.txt shows it, its
// place in the state store (kind, statuses, transitions, indexed attributes), its sealed API key,
// its artifact folder, the validation and defaults of a run request, the timing estimate
// (reference/lens-evaluation.md §1) and the result shapes of §5 (metrics, SLA verdict, goodput).
//
// A run (Run) is a struct whose fields are its public document's, encoded whole; the evaluation
// API's OpenAPI schema of a run is generated from it. Every stored field survives a
// read-modify-write: a field this version does not know (a newer version's), or a known one the
// Go fields cannot carry as stored (an explicit null, an empty list where a value may be left
// out), is kept in Extra and written back unchanged; fields the spec writes as null once known
// (error, namespace, owner_user_id, guide) are rawjson.Opt. The defaults of a request are applied
// once, when BuildRun makes the run; a benchmark block stored by an older version without a key
// reads with that key's default.
//
// It may import runtime/rawjson (its JSON encoding, without HTML escaping), runtime/problem, runtime/state, runtime/secret,
// runtime/recordrepo, runtime/loadgen (the per-request Record), runtime/livesummary (the live
// summary a running run shows), runtime/enginemodel (the registered accelerator profiles: its
// hardware catalogue) and events.
package evalrun
