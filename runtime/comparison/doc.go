// Package comparison owns the comparison v2 report of an evaluation (reference/lens-evaluation.md
// §2): one comparison per guide case and each of its baselines (SLA verdict, configuration facts,
// parity, delta percentages, matched matrix and rate-stage statistics with ratios, geometric
// means, suite-normalized throughput and grouped ratios), the topology comparisons between guide
// cases of one scenario, each comparison's confidence intervals of the headline metrics, and the
// staleness rules that make a stored report be rebuilt.
//
// Build is a pure function of the cases it is given: the workflow orchestrator calls it when a
// workflow finishes and the evaluation API when NeedsRefresh says a stored report is stale.
// Objects whose key order the reference states (rows, statistics, metric maps in their listed
// order) are encoded in that order; encoding/json alone sorts map keys, so the metric maps are
// the small Ordered type of this package.
//
// It may import runtime/evalrun (the SLA verdict of §5, the bootstrap records), events (the
// verdict's shape) and gonum's distuv (Student's t quantiles of the Welch intervals).
package comparison
