// Package benchmarkrunner is the benchmark-runner stage: it executes queued benchmark runs. A
// run is claimed with a lease (owner, expiry, fencing token) and moved to running; the runner
// checks the endpoint is serving and every serving endpoint (the execution's replicas, else the
// endpoint) is monitored: up, with two samples of vllm:num_requests_running (phase
// preparing-monitoring, monitor.go), then drives the workload on the
// shared load engine (runtime/loadgen): a matrix's uncounted warm-up and its points x
// concurrency stages as closed loops (exactly `concurrency` requests in flight until
// `num_requests` completed), a shared-prefix workload's Poisson rate stages on an absolute clock
// with groups sharing a system prompt, or a named workload shipped with Lensfn. Stages run back
// to back on one clock (every stage's records count from the start of the measured traffic), so
// a run's throughput, goodput and timelines span its real wall time. Requests are
// streamed and timed token by token; per-request records stream to the run's per-request.jsonl;
// progress, live metrics, heartbeats and logs go to the state store every second; a cancel is
// honoured within a second and the resolved wait_timeout_seconds bounds each invocation. The
// results take the shapes of reference/lens-evaluation.md §5 (metrics, matrix_results with
// stage_metrics, rate_stage_results and capacity_analysis, warmup, SLA verdict, SLO goodput),
// with serving evidence derived per window and per endpoint (derive.go) from the runner's own
// /metrics scrapes or, with LENS_PROMETHEUS_URL, from a Prometheus's range queries over the
// clock-aligned benchmark window (prometheus.go), and a completion-time resource_snapshot;
// then it emits dev.lensfn.evaluation.run.finished.v1. The run's diagnostics (diagnostics.go) say
// per item what evidence exists and why the rest does not; diagnostics.cluster is the cluster
// evidence the deployer recorded on the run's deployment execution (the runner reads it from the
// inventory and never holds a cluster credential).
//
// Events are the fast path; every instance also sweeps the queue (a run whose event was lost
// still runs) and fails runs whose runner stopped renewing its lease ("runner lost"), within
// one lease period.
//
// While a run sends, its live_metrics carry a summary of the requests so far
// (runtime/livesummary: percentiles from mergeable sketches, windowed and overall throughput,
// error causes); a worker stores its summary on its record and the owner merges the workers'.
//
// An execution (bench.go) is one claimed run on its way through its phases: it prepares the
// run, sends the workload stage by stage and assembles the result from parts, each its own type
// and file with its own lock over its own fields only:
//   - runPlan (plan.go): what the execution sends, fixed once built (spec, stages and workload,
//     the endpoint, model and key, the request shape, budget, seed, and its role: the owner or
//     one worker, and how many copies it sends); read-only, so unlocked.
//   - progressReporter (progress.go): the phase, request counts, live summary and heartbeat it
//     stores on the run (a worker: on its worker record), and the cancel watch.
//   - evidenceMonitor (evidence.go, diagnostics.go; the collector in monitor.go, prometheus.go,
//     derive.go): monitoring readiness before the traffic, the scrapes during it, the window's and
//     rate stages' evidence, the resource snapshot and the diagnostics after it.
//   - ownerMerge (merge.go): the owner's side of a run with workers (workers.go holds the
//     worker's): fan-out, following the workers into the run's progress, and the replay of their
//     records stage by stage.
//   - tally (tally.go): the measured requests' numbers (the run's, points', stages' and
//     repetitions' builders over one sample store).
//
// No part holds its lock while calling another, so there is no lock order between parts.
//
// It may import events, runtime/fn, runtime/cloudevent, runtime/state,
// runtime/egress, runtime/inventory, runtime/evalrun, runtime/rawjson, runtime/leasedrun, runtime/livesummary,
// runtime/loadgen, runtime/promtargets, runtime/workload (the request schedules), and
// runtime/enginemodel with wasm-modules/stepcost (the declared hardware profile of a run's
// accelerator_profile, diagnostics.go).
package benchmarkrunner
