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
	// TypeDeploymentRequested: a workflow wants a configuration deployed as an execution.
	TypeDeploymentRequested = "dev.lensfn.evaluation.deployment.requested.v1"
	// TypeDeploymentCleanupRequested: a workflow is done with a deployment it owns.
	TypeDeploymentCleanupRequested = "dev.lensfn.evaluation.deployment.cleanup.requested.v1"
	// TypeDeploymentReady: a requested deployment answers and its execution is recorded.
	TypeDeploymentReady = "dev.lensfn.evaluation.deployment.ready.v1"
	// TypeDeploymentFailed: a deployment (or its cleanup) failed.
	TypeDeploymentFailed = "dev.lensfn.evaluation.deployment.failed.v1"
	// TypeDeploymentCleaned: a deployment was stopped and its execution removed.
	TypeDeploymentCleaned = "dev.lensfn.evaluation.deployment.cleaned.v1"
)

// Sources name the producer of an event (the CloudEvent `source` attribute).
const (
	SourceSimulationAPI = "/lensfn/simulation-api"
	SourceTraceReplayer = "/lensfn/trace-replayer"
	SourceOrchestrator  = "/lensfn/workflow-orchestrator"
	SourceDeployer      = "/lensfn/deployer"
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

// DeploymentRequested is the data of TypeDeploymentRequested. The requester picks the
// execution id, so it can link the case to it before the deployment exists and so a redelivered
// or repeated request names the same deployment (the deployer deploys an id once).
type DeploymentRequested struct {
	ExecutionID      string `json:"execution_id" doc:"UUID the deployment execution will have; the deployment's identity"`
	ConfigurationID  string `json:"configuration_id" doc:"the deployable-configuration.v1 artifact to deploy"`
	ClusterSessionID string `json:"cluster_session_id" doc:"active session of the cluster to deploy on; its kind picks the provider (local or knative)"`
	CaseRef          string `json:"case_ref" doc:"the requester's reference, echoed in every answer, e.g. <workflow id>/<case id>"`
	Name             string `json:"name,omitempty" doc:"display name of the execution (default: the configuration's name)"`
}

// DeploymentCleanupRequested is the data of TypeDeploymentCleanupRequested.
type DeploymentCleanupRequested struct {
	ExecutionID string `json:"execution_id" doc:"the deployment to stop, as requested"`
	CaseRef     string `json:"case_ref" doc:"the requester's reference, echoed in the answer"`
}

// DeploymentReady is the data of TypeDeploymentReady.
type DeploymentReady struct {
	ExecutionID      string   `json:"execution_id" doc:"the deployment execution, now status ready with ownership evaluation"`
	ConfigurationID  string   `json:"configuration_id" doc:"the artifact deployed"`
	CaseRef          string   `json:"case_ref" doc:"as requested"`
	Provider         string   `json:"provider" doc:"local or knative"`
	ProviderRef      string   `json:"provider_ref" doc:"the configuration's provider ref"`
	Endpoint         string   `json:"endpoint" doc:"OpenAI base URL (ending /v1) a benchmark targets"`
	BaselineURL      string   `json:"baseline_url,omitempty" doc:"the router's plain balanced base URL (/v1), for the kubernetes-service baseline; empty without a router"`
	ReplicaEndpoints []string `json:"replica_endpoints" doc:"each replica's base URL (no /v1), for evidence scraping"`
	Model            string   `json:"model" doc:"the model the replicas serve"`
}

// DeploymentFailed is the data of TypeDeploymentFailed.
type DeploymentFailed struct {
	ExecutionID     string `json:"execution_id" doc:"the deployment"`
	ConfigurationID string `json:"configuration_id,omitempty" doc:"the artifact, when known"`
	CaseRef         string `json:"case_ref" doc:"as requested"`
	Operation       string `json:"operation" doc:"deploy or cleanup: a failed cleanup keeps the record, and a new cleanup request retries it"`
	Error           string `json:"error" doc:"what went wrong, for the case's error or cleanup_error"`
}

// DeploymentCleaned is the data of TypeDeploymentCleaned.
type DeploymentCleaned struct {
	ExecutionID string `json:"execution_id" doc:"the deployment, whose execution record is gone"`
	CaseRef     string `json:"case_ref" doc:"as requested"`
}

// Definition describes one event type of the catalogue.
type Definition struct {
	Type        string
	Source      string
	Description string
	Payload     reflect.Type
	// Extensions are the extension attributes every event of the type carries, which Triggers
	// may filter on (external types only: Lensfn's own are told apart by type and source).
	Extensions map[string]string
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
	{
		Type:   TypeEvaluationRequested,
		Source: SourceUser,
		Description: "A user asks for a multi-configuration evaluation (the POST /api/v1/evaluate/evaluations body plus an " +
			"idempotency key); the evaluation API creates it exactly as the REST route does, once per key.",
		Payload: reflect.TypeFor[EvaluationRequested](),
	},
	{
		Type:        TypeWorkflowQueued,
		Source:      SourceEvaluationAPI,
		Description: "A workflow has work for the orchestrator: it was created or retried, or a cancel was requested.",
		Payload:     reflect.TypeFor[WorkflowQueued](),
	},
	{
		Type:        TypeWorkflowFinished,
		Source:      SourceOrchestrator,
		Description: "A workflow reached a terminal status (an evaluation's report is then stored; deployment cleanup may still be running).",
		Payload:     reflect.TypeFor[WorkflowFinished](),
	},
	{
		Type:        TypeDeploymentRequested,
		Source:      SourceOrchestrator,
		Description: "A workflow case needs a configuration deployed as a deployment execution owned by the evaluation.",
		Payload:     reflect.TypeFor[DeploymentRequested](),
	},
	{
		Type:        TypeDeploymentCleanupRequested,
		Source:      SourceOrchestrator,
		Description: "A workflow no longer needs a deployment it owns: stop it and remove its execution.",
		Payload:     reflect.TypeFor[DeploymentCleanupRequested](),
	},
	{
		Type:        TypeDeploymentReady,
		Source:      SourceDeployer,
		Description: "A requested deployment passed its health probes; its execution is recorded as ready.",
		Payload:     reflect.TypeFor[DeploymentReady](),
	},
	{
		Type:        TypeDeploymentFailed,
		Source:      SourceDeployer,
		Description: "A deployment, or the cleanup of one, failed; the error says why.",
		Payload:     reflect.TypeFor[DeploymentFailed](),
	},
	{
		Type:        TypeDeploymentCleaned,
		Source:      SourceDeployer,
		Description: "A deployment was stopped and its execution record removed.",
		Payload:     reflect.TypeFor[DeploymentCleaned](),
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
