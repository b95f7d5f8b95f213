package simulationapi

import (
	"net/http"

	"github.com/lensfn/lensfn/runtime/apiroute"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/openapi"
	"github.com/lensfn/lensfn/runtime/simtask"
)

// OpenAPIPath is where the function serves its OpenAPI document.
const OpenAPIPath = "/api/simulation/openapi.json"

// route is one entry of the function's route table (apiroute.Route): the operation that
// documents it and the method of API that serves it.
type route = apiroute.Route[*API]

// Document is the simulation API's OpenAPI 3.1 document: one operation per route of the route
// table, its schemas generated from the request types the handlers decode and the views they
// answer.
func Document() *openapi.Doc {
	return apiroute.Document(newTable())
}

// newTable makes the document's header and the route table, its operations' schemas
// registered in the document (apiroute adds the operations).
func newTable() (*openapi.Doc, []route) {
	d := openapi.New("Lensfn simulation API", "v1",
		"Backends, scenarios, model discovery, trace datasets and simulation tasks with live progress and artifacts (spec/simulation-api.zh.txt).")
	return d, table(d)
}

// routes is the route table as the runtime serves it for a; it renders the document a serves at
// OpenAPIPath.
func (a *API) routes() ([]fn.Route, error) {
	d, t := newTable()
	routes, doc, err := apiroute.Serve(d, t, a)
	a.doc = doc
	return routes, err
}

// openAPIDocument serves the document rendered from the route table.
func (a *API) openAPIDocument(w http.ResponseWriter, _ *http.Request) error {
	openapi.Write(w, a.doc)
	return nil
}

// table is the route table, its operations' schemas registered in d.
func table(d *openapi.Doc) []route {
	read, run := string(auth.SimulationRead), string(auth.SimulationRun)
	ok := func(desc string, s openapi.Schema) map[int]openapi.Response {
		return map[int]openapi.Response{http.StatusOK: {Description: desc, Schema: s}}
	}
	wrap := func(key string, item openapi.Schema) openapi.Schema {
		return openapi.Object(map[string]any{key: openapi.ArrayOf(item)}, key)
	}
	str := openapi.Schema{"type": "string"}
	task := d.Of(simtask.Task{})
	d.Refine("Task", "status", openapi.Schema{"enum": simtask.Statuses})
	status := openapi.Schema{"enum": simtask.Statuses}
	accepted := map[int]openapi.Response{http.StatusAccepted: {Description: "the queued task",
		Schema: openapi.Object(map[string]any{"task_id": str, "status": status, "task": task}, "task_id", "status", "task")}}
	// Stop and delete answer the task id with what they did (tasks.go stopTask, deleteTask).
	taskStatus := func(done string) openapi.Schema {
		return openapi.Object(map[string]any{"task_id": str, "status": openapi.Schema{"const": done}}, "task_id", "status")
	}
	notFound, conflict, bad := http.StatusNotFound, http.StatusConflict, http.StatusBadRequest

	counts := map[string]any{}
	for _, s := range simtask.Statuses {
		counts[s] = openapi.Schema{"type": "integer"}
	}
	facets := map[string]any{}
	for _, f := range []string{"backends", "models", "datasets", "trace_formats", "endpoints"} {
		facets[f] = openapi.ArrayOf(str)
	}
	list := openapi.Object(map[string]any{"tasks": openapi.ArrayOf(task), "total": openapi.Schema{"type": "integer"},
		"offset": openapi.Schema{"type": "integer"}, "limit": openapi.Schema{"type": "integer"},
		"counts": openapi.Object(counts), "facets": openapi.Object(facets)}, "tasks", "total", "offset", "limit", "counts")
	issues := d.Of(IssuesResponse{})

	return []route{
		{Op: openapi.Op{Method: "GET", Path: OpenAPIPath, Summary: "This document", Responses: ok("the OpenAPI 3.1 document", openapi.Schema{"type": "object"})}, Handle: (*API).openAPIDocument},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/backends", Summary: "Simulation backends and their capabilities", Scope: read,
			Responses: ok("backends", wrap("backends", d.Of(Backend{})))}, Handle: (*API).listBackends},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/scenarios", Summary: "Scenarios and the backends that support them", Scope: read,
			Responses: ok("scenarios", wrap("scenarios", d.Of(ScenarioView{})))}, Handle: (*API).listScenarios},
		{Op: openapi.Op{Method: "POST", Path: "/api/simulation/models/discover", Summary: "List an endpoint's models", Scope: run,
			Request: d.Request(DiscoverRequest{}, "endpoint_url"), Responses: ok("the endpoint's models", d.Of(DiscoverResponse{})), Errors: []int{bad, http.StatusBadGateway, http.StatusGatewayTimeout}}, Handle: (*API).discover},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/trace-datasets", Summary: "Trace datasets and whether they are downloaded", Scope: read,
			Responses: ok("datasets", openapi.Object(map[string]any{"data_dir": str, "datasets": openapi.ArrayOf(d.Of(DatasetView{}))}, "data_dir", "datasets"))}, Handle: (*API).listDatasets},
		{Op: openapi.Op{Method: "POST", Path: "/api/simulation/trace-datasets/download", Summary: "Download (or verify) a trace dataset", Scope: run,
			Request: d.Request(DownloadRequest{}, "dataset"), Responses: ok("the dataset's file", d.Of(DownloadResult{})),
			Errors: []int{bad, notFound, http.StatusBadGateway, http.StatusGatewayTimeout}}, Handle: (*API).download},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/trace-datasets/{name}/timeline", Summary: "A dataset's request timeline", Scope: read,
			Query:     []openapi.Param{{Name: "bins", Description: "timeline bins (50-2000, default 800)", Schema: openapi.Schema{"type": "integer", "minimum": 50, "maximum": 2000}}},
			Responses: ok("the timeline", d.Of(Timeline{})), Errors: []int{notFound, conflict}}, Handle: (*API).timeline},
		{Op: openapi.Op{Method: "POST", Path: "/api/simulation/tasks", Summary: "Create a simulation task", Scope: run,
			Request: d.Request(CreateTaskRequest{}), Responses: accepted, Errors: []int{bad, notFound, conflict}}, Handle: (*API).createTask},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/tasks", Summary: "List simulation tasks", Scope: read, Query: listQuery,
			Responses: ok("a page of tasks with counts and facets", list)}, Handle: (*API).listTasks},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/tasks/{id}", Summary: "Get a simulation task", Scope: read,
			Responses: ok("the task", task), Errors: []int{notFound}}, Handle: (*API).getTask},
		{Op: openapi.Op{Method: "DELETE", Path: "/api/simulation/tasks/{id}", Summary: "Delete a finished task and its artifacts", Scope: run,
			Responses: ok("deleted", taskStatus("deleted")), Errors: []int{notFound, conflict}}, Handle: (*API).deleteTask},
		{Op: openapi.Op{Method: "POST", Path: "/api/simulation/tasks/{id}/stop", Summary: "Stop a running task", Scope: run,
			Responses: ok("cancelling", taskStatus(simtask.StatusCancelling)), Errors: []int{notFound, conflict}}, Handle: (*API).stopTask},
		{Op: openapi.Op{Method: "POST", Path: "/api/simulation/tasks/{id}/rerun", Summary: "Rerun a task as a new task, optionally retargeted", Scope: run,
			Request: d.Request(RerunRequest{}), OptionalBody: true, Responses: accepted, Errors: []int{bad, notFound, conflict}}, Handle: (*API).rerunTask},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/tasks/{id}/artifacts/{kind}", Summary: "Download a task's artifact", Scope: read,
			Description: "kind: per-request-jsonl, per-request-csv, report-html (self-contained, charts as inline SVG), and the backend's own artifacts.",
			Responses: map[int]openapi.Response{http.StatusOK: {Description: "the artifact as an attachment", Media: "application/octet-stream",
				Headers: map[string]string{"Content-Disposition": "attachment; filename=<task>-<artifact>"}}},
			Errors: []int{notFound, conflict}}, Handle: (*API).downloadArtifact},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/tasks/{id}/events", Summary: "Follow a task live (Server-Sent Events)", Scope: read,
			Description: "Events: `status` {status, progress_percent, progress_message, live_summary}, `log` {line}, and a closing `end`. " +
				"Each event's id resumes the stream (Last-Event-ID header or lastEventId).",
			Query:     []openapi.Param{{Name: "lastEventId", Description: "resume after this event id"}},
			Responses: map[int]openapi.Response{http.StatusOK: {Description: "the event stream", Media: "text/event-stream", Schema: str}},
			Errors:    []int{bad, notFound, http.StatusTooManyRequests}}, Handle: (*API).taskEvents},
		{Op: openapi.Op{Method: "GET", Path: "/api/simulation/tasks/{id}/response-code-issues", Summary: "Requests of a task that answered a status code", Scope: read,
			Query: []openapi.Param{{Name: "status_code", Description: "an HTTP status, or unknown for requests without a response"},
				{Name: "offset", Schema: openapi.Schema{"type": "integer", "minimum": 0}}, {Name: "limit", Schema: openapi.Schema{"type": "integer", "minimum": 1, "maximum": 500}}},
			Responses: ok("a page of matching requests", issues), Errors: []int{notFound}}, Handle: (*API).responseCodeIssues},
	}
}

// listQuery is what GET /tasks accepts (the runtime refuses any other parameter), with what
// each filter means.
var listQuery = []openapi.Param{
	{Name: "status", Description: "task status"}, {Name: "scenario", Description: "scenario name"},
	{Name: "search", Description: "text in a task's name, id, model or endpoint"},
	{Name: "backend", Description: "backend name"}, {Name: "model", Description: "model name"},
	{Name: "dataset", Description: "trace dataset"}, {Name: "trace_format", Description: "trace format"},
	{Name: "endpoint", Description: "endpoint URL"}, {Name: "created_after", Description: "RFC 3339 time"},
	{Name: "created_before", Description: "RFC 3339 time"}, {Name: "offset", Description: "tasks to skip"},
	{Name: "limit", Description: "tasks to return"},
}
