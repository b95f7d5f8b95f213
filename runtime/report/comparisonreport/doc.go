// Package comparisonreport renders an evaluation's comparison v2 report (runtime/comparison) as
// one self-contained HTML page (artifact kind report-html): per comparison the SLA verdict,
// parity, the headline metrics with their delta percentages, the matched matrix and rate-stage
// rows with their ratios, geometric means and grouped ratios as inline-SVG bar charts, and the
// topology comparisons between guide configurations. The page loads nothing from the network.
//
// It may import runtime/report and runtime/comparison.
package comparisonreport
