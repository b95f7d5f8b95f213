// Package recordcsv owns the per-request CSV export (artifact kind per-request-csv) shared by
// simulation tasks and benchmark runs: one row per loadgen.Record, its columns in a fixed order,
// cells a spreadsheet cannot read as formulas.
//
// It may import runtime/loadgen.
package recordcsv
