// Package resultanalyzer is the result-analyzer stage: when a replay ends
// (dev.lensfn.simulation.task.replayed.v1) it reads the task's per-request records, computes the
// summary and timelines of spec/NOTES.md with runtime/analysis, writes summary.json beside the
// records, and finishes the task: completed, cancelled (a stopped run keeps its partial result)
// or failed. It holds the task's lease while it works and sweeps for replayed tasks whose event
// was lost, so every replay is analysed exactly once.
//
// It may import events, runtime/fn, runtime/cloudevent, runtime/state, runtime/simtask,
// runtime/analysis, runtime/loadgen, runtime/problem, runtime/report/simreport.
package resultanalyzer
