package events

import "reflect"

// TypeRunWorkerQueued: a benchmark run with parallelism N > 1 fanned out its N workers; each
// event offers one of them to any benchmark-runner instance (the run's owner merges their
// records into the run's one result).
const TypeRunWorkerQueued = "dev.lensfn.evaluation.run.worker.queued.v1"

// RunWorkerQueued is the data of TypeRunWorkerQueued.
type RunWorkerQueued struct {
	RunID   string `json:"run_id" doc:"the benchmark run the worker belongs to"`
	Worker  int    `json:"worker" doc:"the worker's index, 0 to workers-1"`
	Workers int    `json:"workers" doc:"the run's parallelism: how many workers send its workload"`
}

func init() {
	Catalogue = append(Catalogue, Definition{
		Type:   TypeRunWorkerQueued,
		Source: SourceBenchmarkRunner,
		Description: "A benchmark run's owner fanned out one of its parallelism workers: any benchmark-runner instance may " +
			"claim it, send the whole workload once and leave its per-request records for the owner to merge.",
		Payload: reflect.TypeFor[RunWorkerQueued](),
	})
}
