// Package simreport builds a simulation task's report artifacts: the self-contained HTML
// report (kind report-html) with its distributions, timelines, schedule drift, status codes and
// warnings, and the per-request records as CSV (kind per-request-csv). The result analyzer
// writes them when a task finishes; the simulation API writes them on demand for a task that
// has none.
//
// It may import runtime/report, runtime/report/recordcsv, runtime/analysis, runtime/loadgen and runtime/simtask.
package simreport
