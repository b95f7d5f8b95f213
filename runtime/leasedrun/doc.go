// Package leasedrun owns the claim loop of the pipeline's long-running stages (trace-replayer,
// benchmark-runner): a bounded number of slots per instance, a lease per job taken before the
// job's record moves to running, the lease renewed while the job works (losing it to another
// owner cancels the job with state.ErrLeaseLost), a sweep that starts queued jobs an event
// missed and ends the work of lost runners, and a Close that cancels and waits.
//
// What a job is, how it is claimed and how a lost one ends are the caller's: the pool only
// sequences them, so every stage gets the same guarantees (a job offered twice at once runs once;
// a job whose record is no longer queued is skipped; a slot freed wakes the sweep at once).
//
// Hold is the lease renewal on its own, for leased work outside a pool (the deployer's steps
// on a deployment): the pool's jobs run under it too. Periodic is the timer of a stage's sweep
// of its records (the deployer's, the workflow-orchestrator's), with the pool's logging of a
// failed sweep. Metrics are the job metrics every pool's stage keeps, under the stage's names.
//
// It may import runtime/state.
package leasedrun
