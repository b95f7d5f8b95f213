// Package report owns self-contained HTML reports: chart primitives (line, step and bar charts,
// histograms and CDFs) rendered on the server as inline SVG, tables, and the page that holds
// them, with its styles inlined. A report loads nothing from the network and needs no script, so
// it opens from a file. Simulation tasks, benchmark runs and evaluations build their reports
// from these pieces.
//
// It imports only the standard library.
package report
