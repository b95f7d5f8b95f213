// Package tracereplayer is the trace-replayer stage: it runs queued simulation tasks of the
// trace-replayer backend. A task is claimed with a lease (owner, expiry, fencing token) and moved
// to running; its trace is parsed by the format's WASM module, windowed and time-scaled into a
// spool on disk (runtime/tracespool: memory stays flat for million-request traces), and its
// requests are sent on the recorded schedule by the shared load engine, with per-request records
// streamed to the task's per-request.jsonl. Progress, live counts and logs go to the state store
// while it runs; a stop request is honoured within a second. When the replay ends it emits
// dev.lensfn.simulation.task.replayed.v1 for the result analyzer.
//
// Events are the fast path; every instance also sweeps the queue, so a task whose event was lost
// still runs, and fails tasks whose runner lost its lease (a crashed or killed instance). Each
// instance runs at most LENS_MAX_CONCURRENT_TASKS tasks at once.
//
// It may import events, runtime/fn, runtime/egress, runtime/cloudevent, runtime/state, runtime/simtask,
// runtime/secret, runtime/wasmhost, runtime/tracespool, runtime/leasedrun and runtime/loadgen.
package tracereplayer
