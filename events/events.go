package events

import "reflect"

// Prefix starts every Lensfn event type; the last segment is the payload version.
const Prefix = "dev.lensfn."

// Event types. A type names one fact that happened; its payload struct is in Catalogue.
const (
	// TypeDatasetDownloaded: a trace dataset was downloaded and verified into the data dir.
	TypeDatasetDownloaded = "dev.lensfn.simulation.dataset.downloaded.v1"
	// TypeTaskQueued: a simulation task was created (or re-run) and waits for a runner.
	TypeTaskQueued = "dev.lensfn.simulation.task.queued.v1"
	// TypeTaskReplayed: a runner finished sending a task's requests; its records wait for analysis.
	TypeTaskReplayed = "dev.lensfn.simulation.task.replayed.v1"
)

// Sources name the producer of an event (the CloudEvent `source` attribute).
const (
	SourceSimulationAPI = "/lensfn/simulation-api"
	SourceTraceReplayer = "/lensfn/trace-replayer"
)

// DatasetDownloaded is the data of TypeDatasetDownloaded.
type DatasetDownloaded struct {
	Dataset     string `json:"dataset" doc:"catalogue name of the dataset"`
	TraceFormat string `json:"trace_format" doc:"parser module that reads it"`
	Path        string `json:"path" doc:"absolute path of the file (or directory) in the data dir"`
	SHA256      string `json:"sha256" doc:"verified digest of the downloaded bytes"`
	SizeBytes   int64  `json:"size_bytes" doc:"size of the downloaded file"`
}

// TaskQueued is the data of TypeTaskQueued.
type TaskQueued struct {
	TaskID  string `json:"task_id" doc:"8 hex characters"`
	Backend string `json:"backend" doc:"the simulation backend that must run it"`
}

// TaskReplayed is the data of TypeTaskReplayed.
type TaskReplayed struct {
	TaskID      string `json:"task_id" doc:"8 hex characters"`
	RecordsPath string `json:"records_path" doc:"the per-request JSONL artifact"`
	Requests    int    `json:"requests" doc:"records written"`
	Outcome     string `json:"outcome" doc:"completed, cancelled or failed"`
	Message     string `json:"message" doc:"why the replay ended"`
}

// Definition describes one event type of the catalogue.
type Definition struct {
	Type        string
	Source      string
	Description string
	Payload     reflect.Type
}

// Catalogue lists every event type Lensfn emits, in a stable order.
var Catalogue = []Definition{
	{
		Type:        TypeDatasetDownloaded,
		Source:      SourceSimulationAPI,
		Description: "A trace dataset was downloaded, its sha256 verified and its metadata written.",
		Payload:     reflect.TypeFor[DatasetDownloaded](),
	},
	{
		Type:        TypeTaskQueued,
		Source:      SourceSimulationAPI,
		Description: "A simulation task was created or re-run and waits for a runner of its backend.",
		Payload:     reflect.TypeFor[TaskQueued](),
	},
	{
		Type:        TypeTaskReplayed,
		Source:      SourceTraceReplayer,
		Description: "A runner finished sending a simulation task's requests; the per-request records wait for analysis.",
		Payload:     reflect.TypeFor[TaskReplayed](),
	},
	{
		Type:   TypeRunRequested,
		Source: SourceUser,
		Description: "A user asks for a benchmark run (the POST /api/v1/evaluate/runs body plus an idempotency key); " +
			"the evaluation API creates it exactly as the REST route does, once per key.",
		Payload: reflect.TypeFor[RunRequested](),
	},
	{
		Type:        TypeRunQueued,
		Source:      SourceEvaluationAPI,
		Description: "A benchmark run was stored queued and waits for a benchmark runner.",
		Payload:     reflect.TypeFor[RunQueued](),
	},
	{
		Type:        TypeRunFinished,
		Source:      SourceBenchmarkRunner,
		Description: "A benchmark run reached a terminal status: its headline metrics and SLA verdict.",
		Payload:     reflect.TypeFor[RunFinished](),
	},
}

// Lookup returns the definition of an event type.
func Lookup(eventType string) (Definition, bool) {
	for _, d := range Catalogue {
		if d.Type == eventType {
			return d, true
		}
	}
	return Definition{}, false
}

// SchemaFile is the file name, under schemas/, of an event type's JSON Schema.
func SchemaFile(eventType string) string { return eventType + ".schema.json" }

// DataSchemaURI is the `dataschema` attribute sent with an event type.
func DataSchemaURI(eventType string) string {
	return "https://lensfn.dev/events/schemas/" + SchemaFile(eventType)
}
