// Package runreport builds a benchmark run's report artifacts from its record and its
// per-request records: the self-contained HTML report (kind report-html) with the SLA verdict,
// the headline metrics, TTFT/TPOT/latency distributions (CDF and histogram), completion,
// throughput and error timelines, schedule delay, status codes and the per-stage results as bar
// charts, and the per-request records as CSV (kind per-request-csv) with each request's phase
// and stage. evaluation-api renders both on demand, so a run's report always shows its stored
// record.
//
// It may import runtime/report, runtime/report/recordcsv, runtime/analysis (the record reader),
// runtime/loadgen and runtime/evalrun (the run, its SLA verdict included).
package runreport
