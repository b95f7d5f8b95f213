// Package analysis turns a simulation run's per-request records (runtime/loadgen.Record, one
// JSON object per line of per-request.jsonl) into the summary and timelines a task's
// result.summary carries and summary.json stores, and answers the response-code-issues query
// over the same file.
//
// The Accumulator takes records one at a time and keeps only the numbers it needs later, column
// by column in fixed chunks (seven float64s and one byte per request, never the records
// themselves), so a million-request run holds about 58 MB and every percentile is exact: the
// summary selects the order statistics it reports (quickselect) instead of sorting. Definitions follow
// ../shared/spec/NOTES.md and the Lens reference (loadgen-eval-anchors.md section 5.1): nearest
// rank percentiles (index ceil(n*p/100)-1 of the sorted values), latency, TTFT and TPOT over
// successful requests, drift = started - scheduled, timelines of min(120, ceil(span)) equal bins.
//
// It imports only the standard library, runtime/loadgen (for the Record type) and
// runtime/jsoncursor (its record decoder).
package analysis
