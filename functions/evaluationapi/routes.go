package evaluationapi

import (
	"net/http"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/apiroute"
	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/comparison"
	"github.com/lensfn/lensfn/runtime/deployconfig"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/openapi"
	"github.com/lensfn/lensfn/runtime/report/comparisonreport"
	"github.com/lensfn/lensfn/runtime/workflow"
)

// OpenAPIPath is where the function serves its OpenAPI document.
const OpenAPIPath = Prefix + "/openapi.json"

// route is one entry of the function's route table (apiroute.Route): the operation that
// documents it and the method of API that serves it.
type route = apiroute.Route[*API]

// Document is the evaluation API's OpenAPI 3.1 document: one operation per route of the route
// table, generated from Go types: request bodies from the types the handlers decode strictly,
// with the bounds their validation checks; runs, workflows and their cases from their record
// types (evalrun.Run, workflow.Workflow, workflow.Case) themselves; and the comparison report
// from comparison.Report.
func Document() *openapi.Doc {
	return apiroute.Document(newTable())
}

// newTable makes the document's header and the route table, its operations' schemas
// registered in the document (apiroute adds the operations).
func newTable() (*openapi.Doc, []route) {
	d := openapi.New("Lensfn evaluation API", "v1",
		"Benchmark defaults, timing estimates, benchmark runs with live progress and artifacts, evaluation workflows (spec/evaluation-api.txt).")
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

// table is the route table (the runs, then the workflow-run and evaluation routes), its
// operations' schemas registered in d.
func table(d *openapi.Doc) []route {
	read, write := string(auth.EvaluateRunRead), string(auth.EvaluateRunWrite)
	run := runView(d)
	workflowSchema := workflowView(d)
	// detailsCase is one entry of GET /workflow-runs/{id}/details: the case with its deployment
	// and its benchmark run (workflows.go details).
	detailsCase := d.Component("EvaluationDetailsCase", openapi.Object(map[string]any{
		"case":               openapi.Ref("EvaluationCase"),
		"deployment":         openapi.Schema{"type": []string{"object", "null"}},
		"deployment_cases":   openapi.ArrayOf(openapi.Schema{"type": "object"}),
		"deployment_warning": openapi.Schema{"type": []string{"string", "null"}},
		"evaluation":         openapi.Nullable(run),
	}, "case", "deployment", "deployment_cases", "deployment_warning", "evaluation"))
	cancel := d.Of(CancelResponse{})
	items := func(s openapi.Schema) openapi.Schema {
		return openapi.Object(map[string]any{"items": openapi.ArrayOf(s)}, "items")
	}
	ok := func(desc string, s openapi.Schema) map[int]openapi.Response {
		return map[int]openapi.Response{http.StatusOK: {Description: desc, Schema: s}}
	}
	routes := []route{
		{Op: openapi.Op{Method: "GET", Path: OpenAPIPath, Summary: "This document",
			Responses: ok("the OpenAPI 3.1 document", openapi.Schema{"type": "object"})}, Handle: (*API).openAPIDocument},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/benchmark-defaults", Summary: "llm-d-benchmark defaults", Scope: read,
			Responses: ok("BenchmarkDefaultsResponse", d.Of(Defaults{}))}, Handle: (*API).benchmarkDefaults},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/timing-estimate", Summary: "Estimate a benchmark's timing and timeout", Scope: read,
			Request: d.Request(events.BenchmarkSpec{}), OptionalBody: true, Responses: ok("BenchmarkTimingResponse", d.Of(evalrun.Timing{}))}, Handle: (*API).timingEstimate},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/runs", Summary: "Start a benchmark run", Scope: write,
			Request:   d.Request(events.EvaluateRunRequest{}),
			Responses: map[int]openapi.Response{http.StatusAccepted: {Description: "the queued run", Schema: run}},
			Errors:    []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict}}, Handle: (*API).createRun, MaxBody: maxRunBody},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/runs", Summary: "List benchmark runs", Scope: read,
			Responses: ok("BenchmarkRunListResponse (newest first)", items(run))}, Handle: (*API).listRuns},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/runs/{id}", Summary: "Get a benchmark run", Scope: read,
			Responses: ok("BenchmarkRunResponse", run), Errors: []int{http.StatusNotFound}}, Handle: (*API).getRun},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/runs/{id}/cancel", Summary: "Cancel a benchmark run (idempotent)", Scope: write,
			Responses: ok("EvaluationCancelResponse", cancel), Errors: []int{http.StatusNotFound, http.StatusConflict}}, Handle: (*API).cancelRun},
		{Op: openapi.Op{Method: "DELETE", Path: Prefix + "/runs/{id}", Summary: "Delete a finished benchmark run", Scope: write,
			Responses: map[int]openapi.Response{http.StatusNoContent: {Description: "deleted"}}, Errors: []int{http.StatusNotFound, http.StatusConflict}}, Handle: (*API).deleteRun},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/runs/{id}/events", Summary: "Follow a benchmark run live (Server-Sent Events)", Scope: read,
			Description: "Events: `status` {status, phase, progress_percent, progress_message, live_metrics}, `log` {line}, and a closing `end` " +
				"{status, progress_percent, progress_message, error, sla}. Each event's id resumes the stream (Last-Event-ID header or lastEventId).",
			Query:     []openapi.Param{{Name: "lastEventId", Description: "resume after this event id (for clients that cannot set Last-Event-ID)"}},
			Responses: map[int]openapi.Response{http.StatusOK: {Description: "the event stream", Media: "text/event-stream", Schema: openapi.Schema{"type": "string"}}},
			Errors:    []int{http.StatusBadRequest, http.StatusNotFound, http.StatusTooManyRequests}}, Handle: (*API).runEvents},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/runs/{id}/artifacts/{kind}", Summary: "Download a run's artifact", Scope: read,
			Description: "kind: per-request-jsonl (the records as written), per-request-csv, report-html (self-contained, charts as inline SVG).",
			Responses: map[int]openapi.Response{http.StatusOK: {Description: "the artifact as an attachment", Media: "application/octet-stream",
				Headers: map[string]string{"Content-Disposition": "attachment; filename=<run>-<artifact>"}}},
			Errors: []int{http.StatusNotFound}}, Handle: (*API).downloadArtifact},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/workflow-runs", Summary: "Start an evaluation workflow", Scope: write,
			Request: simpleRequest(d), Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict},
			Responses: map[int]openapi.Response{http.StatusAccepted: {Description: "EvaluationWorkflowResponse", Schema: workflowSchema}}}, Handle: (*API).createSimple},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/evaluations", Summary: "Start a multi-configuration evaluation", Scope: write,
			Request: evaluationRequest(d), Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict},
			Responses: map[int]openapi.Response{http.StatusAccepted: {Description: "EvaluationWorkflowResponse with generated cases", Schema: workflowSchema}}}, Handle: (*API).createEvaluation, MaxBody: maxEvaluationBody},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/workflow-runs", Summary: "List evaluation workflows", Scope: read,
			Responses: ok("EvaluationWorkflowListResponse", items(workflowSchema))}, Handle: (*API).listWorkflows},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/workflow-runs/{id}", Summary: "Get an evaluation workflow", Scope: read,
			Responses: ok("EvaluationWorkflowResponse", workflowSchema), Errors: []int{http.StatusNotFound}}, Handle: (*API).getWorkflow},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/workflow-runs/{id}/details", Summary: "A workflow with its cases and comparison report", Scope: read,
			Responses: ok("EvaluationDetailsResponse", openapi.Object(map[string]any{"workflow": workflowSchema, "cases": openapi.ArrayOf(detailsCase),
				"report": openapi.Nullable(d.Of(comparison.Report{}))}, "workflow", "cases", "report")), Errors: []int{http.StatusNotFound}}, Handle: (*API).workflowDetails},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/workflow-runs/{id}/events", Summary: "Follow a workflow live (Server-Sent Events)", Scope: read,
			Description: "Events: `status` {status, error?} of the workflow, `case` {case_id, status, error?} per case change, `log` {line} " +
				"(one per change), and a closing `end` {status, error?, cancellation_error?, finished_at?, report_ready, sla_met} at a terminal status " +
				"(sla_met: false if any comparison missed its SLA, true if all checked met it, null without checks). " +
				"Each event's id resumes the stream (Last-Event-ID header or lastEventId).",
			Query:     []openapi.Param{{Name: "lastEventId", Description: "resume after this event id (for clients that cannot set Last-Event-ID)"}},
			Responses: map[int]openapi.Response{http.StatusOK: {Description: "the event stream", Media: "text/event-stream", Schema: openapi.Schema{"type": "string"}}},
			Errors:    []int{http.StatusBadRequest, http.StatusNotFound, http.StatusTooManyRequests}}, Handle: (*API).workflowEvents},
		{Op: openapi.Op{Method: "GET", Path: Prefix + "/workflow-runs/{id}/artifacts/" + comparisonreport.KindHTML, Summary: "Download an evaluation's comparison report", Scope: read,
			Description: "The comparison report as one self-contained HTML page (bar charts as inline SVG; it loads and runs nothing), " +
				"rebuilt first when the stored report is stale. 404 until the evaluation has a report.",
			Responses: map[int]openapi.Response{http.StatusOK: {Description: "the page as an attachment", Media: "text/html",
				Headers: map[string]string{"Content-Disposition": "attachment; filename=<workflow>-report.html"}}},
			Errors: []int{http.StatusNotFound}}, Handle: (*API).workflowReportHTML},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/workflow-runs/{id}/retry", Summary: "Retry a failed workflow", Scope: write,
			Responses: map[int]openapi.Response{http.StatusAccepted: {Description: "EvaluationWorkflowResponse", Schema: workflowSchema}},
			Errors:    []int{http.StatusNotFound, http.StatusConflict}}, Handle: (*API).retryWorkflow},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/workflow-runs/{id}/cancel", Summary: "Cancel a workflow", Scope: write,
			Responses: ok("EvaluationCancelResponse", cancel), Errors: []int{http.StatusNotFound, http.StatusConflict}}, Handle: (*API).cancelWorkflow},
		{Op: openapi.Op{Method: "POST", Path: Prefix + "/workflow-runs/{id}/cases/{case_id}/cancel", Summary: "Cancel one case of a workflow", Scope: write,
			Responses: ok("EvaluationCancelResponse", cancel), Errors: []int{http.StatusNotFound, http.StatusConflict}}, Handle: (*API).cancelCase},
		{Op: openapi.Op{Method: "DELETE", Path: Prefix + "/workflow-runs/{id}", Summary: "Delete a finished workflow", Scope: write,
			Responses: map[int]openapi.Response{http.StatusNoContent: {Description: "deleted"}}, Errors: []int{http.StatusNotFound, http.StatusConflict}}, Handle: (*API).deleteWorkflow},
	}
	// The bounds refine the request components the table registered.
	requestBounds(d)
	return routes
}

// runView is BenchmarkRunResponse, generated from evalrun.Run, with the run statuses.
func runView(d *openapi.Doc) openapi.Schema {
	d.Name(evalrun.Run{}, "BenchmarkRunResponse")
	s := d.Of(evalrun.Run{})
	d.Refine("BenchmarkRunResponse", "kind", openapi.Schema{"const": "benchmark"})
	d.Refine("BenchmarkRunResponse", "status", openapi.Schema{"enum": evalrun.Statuses})
	d.Refine("BenchmarkRunResponse", "created_at", openapi.Schema{"format": "date-time"})
	d.Refine("BenchmarkRunResponse", "progress_percent", openapi.Schema{"minimum": 0, "maximum": 100})
	return s
}

// workflowView is EvaluationWorkflowResponse, generated from workflow.Workflow (and its cases
// from workflow.Case, its report from comparison.Report), with the status enums of
// lens-evaluation.md §3, the baseline types and the provider refs the decoders accept.
func workflowView(d *openapi.Doc) openapi.Schema {
	d.Name(workflow.Workflow{}, "EvaluationWorkflowResponse")
	d.Name(workflow.Case{}, "EvaluationCase")
	d.Name(comparison.Report{}, "ComparisonReport")
	s := d.Of(workflow.Workflow{})
	d.Refine("EvaluationWorkflowResponse", "kind", openapi.Schema{"const": "workflow"})
	d.Refine("EvaluationWorkflowResponse", "status", openapi.Schema{"enum": workflow.Statuses})
	d.Refine("EvaluationWorkflowResponse", "created_at", openapi.Schema{"format": "date-time"})
	d.Refine("EvaluationWorkflowResponse", "deployment_ownership", openapi.Schema{"enum": []string{workflow.OwnershipEvaluation, workflow.OwnershipExisting}})
	d.Refine("EvaluationCase", "kind", openapi.Schema{"enum": []string{"guide", "baseline"}})
	d.Refine("EvaluationCase", "status", openapi.Schema{"enum": workflow.CaseStatuses})
	d.Refine("EvaluationCase", "baseline_type", openapi.Schema{"enum": workflow.BaselineTypes})
	d.Refine("EvaluationCase", "provider_ref", openapi.Schema{"enum": deployconfig.Providers()})
	d.Refine("EvaluationCase", "attempt", openapi.Schema{"minimum": 0})
	return s
}

// simpleRequest is POST /workflow-runs' body, generated from workflow.SimpleRequest (decoded
// strictly), with the bounds workflow.ParseSimple checks.
func simpleRequest(d *openapi.Doc) openapi.Schema {
	s := d.Request(workflow.SimpleRequest{}, "model", "cluster_session_id")
	d.Bound(s, "model", openapi.Schema{"minLength": 1, "maxLength": deployconfig.MaxNameLength})
	d.Bound(s, "cluster_session_id", openapi.Schema{"minLength": 1, "maxLength": 128})
	d.Bound(s, "replicas", openapi.Schema{"minimum": 1, "maximum": deployconfig.MaxReplicas})
	d.Bound(s, "tensor_parallel_size", openapi.Schema{"minimum": 1, "maximum": deployconfig.MaxTensorParallel})
	d.Bound(s, "image", openapi.Schema{"maxLength": deployconfig.MaxImageLength})
	// The benchmark fields go through evalrun.ValidateSpec.
	d.Bound(s, "parallelism", openapi.Schema{"minimum": 1, "maximum": evalrun.MaxParallelism})
	d.Bound(s, "harness", openapi.Schema{"maxLength": 64})
	d.Bound(s, "workload", openapi.Schema{"maxLength": 255, "pattern": evalrun.WorkloadPattern})
	return s
}

// evaluationRequest is POST /evaluations' body, generated from events.EvaluationCreateRequest
// (problem.DecodeStrictFields refuses unknown fields), with the bounds
// workflow.ValidateEvaluation checks at the top level.
func evaluationRequest(d *openapi.Doc) openapi.Schema {
	s := d.Request(events.EvaluationCreateRequest{}, "cluster_session_id", "benchmark_plans")
	d.Bound(s, "cluster_session_id", openapi.Schema{"minLength": 1, "maxLength": 128})
	d.Bound(s, "name", openapi.Schema{"minLength": 1, "maxLength": workflow.MaxNameLength})
	d.Bound(s, "benchmark_plans", openapi.Schema{"minItems": 1, "maxItems": workflow.MaxPlans})
	return s
}

// requestBounds puts the limits evalrun.ValidateSpec and workflow.ValidateEvaluation check
// into the request components, so a body the document accepts is one the handlers accept as far
// as sizes, ranges and enums go (cross-field rules stay in the descriptions and the 422s).
func requestBounds(d *openapi.Doc) {
	between := func(lo, hi int) openapi.Schema { return openapi.Schema{"minimum": lo, "maximum": hi} }
	upTo := func(n int) openapi.Schema { return openapi.Schema{"maxItems": n} }
	for _, spec := range []string{"BenchmarkSpec", "EvaluateRunRequest"} {
		d.Refine(spec, "parallelism", between(1, evalrun.MaxParallelism))
		d.Refine(spec, "wait_timeout_seconds", between(1, evalrun.MaxTimeoutSeconds))
		d.Refine(spec, "warmup_requests", between(0, evalrun.MaxWarmupRequests))
		d.Refine(spec, "harness_memory_gib", openapi.Schema{"exclusiveMinimum": 0, "maximum": evalrun.MaxHarnessMemoryGiB})
		d.Refine(spec, "workload", openapi.Schema{"maxLength": 255, "pattern": evalrun.WorkloadPattern})
		// The decoders count bytes; maxLength counts characters, the same for ASCII.
		d.Refine(spec, "harness", openapi.Schema{"maxLength": 64})
		d.Refine(spec, "accelerator_profile", openapi.Schema{"maxLength": 128})
		d.Refine(spec, "storage_class_name", openapi.Schema{"maxLength": 253})
		d.Refine(spec, "matrix", upTo(evalrun.MaxMatrixPoints))
		d.Refine(spec, "concurrency_stages", upTo(evalrun.MaxConcurrencyStages))
	}
	for _, id := range []string{"deployment_execution_id", "model_service_group_id", "cluster_session_id"} {
		d.Refine("EvaluateRunRequest", id, openapi.Schema{"maxLength": 128})
	}
	for _, text := range []string{"api_key", "specification_file", "http_proxy", "https_proxy", "no_proxy"} {
		d.Refine("EvaluateRunRequest", text, openapi.Schema{"maxLength": evalrun.MaxTextField})
	}
	d.Refine("BenchmarkSourceInput", "repository", openapi.Schema{"maxLength": evalrun.MaxTextField})
	d.Refine("BenchmarkSourceInput", "revision", openapi.Schema{"maxLength": 256})
	d.Refine("SLATargetsInput", "ttft_ms", openapi.Schema{"exclusiveMinimum": 0, "maximum": evalrun.MaxSLAMs})
	d.Refine("SLATargetsInput", "tpot_ms", openapi.Schema{"exclusiveMinimum": 0, "maximum": evalrun.MaxSLAMs})
	d.Refine("SLATargetsInput", "throughput_min_tps", openapi.Schema{"minimum": 0})
	d.Refine("SLATargetsInput", "success_rate_min_percent", openapi.Schema{"minimum": 0, "maximum": 100})
	d.Refine("SLATargetsInput", "ttft_percentile", openapi.Schema{"enum": evalrun.SLAPercentiles})
	d.Refine("SLATargetsInput", "tpot_percentile", openapi.Schema{"enum": evalrun.SLAPercentiles})
	d.Refine("MatrixPointInput", "isl", between(1, evalrun.MaxInputTokens))
	d.Refine("MatrixPointInput", "osl", between(1, evalrun.MaxOutputTokens))
	d.Refine("ConcurrencyStageInput", "concurrency", between(1, evalrun.MaxConcurrency))
	d.Refine("ConcurrencyStageInput", "num_requests", between(1, evalrun.MaxStageRequests))
	d.Refine("SharedPrefixInput", "num_groups", between(1, evalrun.MaxSharedPrefixGroups))
	d.Refine("SharedPrefixInput", "num_prompts_per_group", between(1, evalrun.MaxSharedPrefixGroups))
	d.Refine("SharedPrefixInput", "system_prompt_len", between(0, evalrun.MaxInputTokens))
	d.Refine("SharedPrefixInput", "question_len", between(1, evalrun.MaxInputTokens))
	d.Refine("SharedPrefixInput", "output_len", between(1, evalrun.MaxOutputTokens))
	d.Refine("SharedPrefixInput", "stages", openapi.Schema{"minItems": 1, "maxItems": evalrun.MaxRateStages})
	d.Refine("RateStageInput", "rate", openapi.Schema{"exclusiveMinimum": 0, "maximum": evalrun.MaxRate})
	d.Refine("RateStageInput", "duration", openapi.Schema{"exclusiveMinimum": 0, "maximum": evalrun.MaxStageDuration})

	d.Refine("BenchmarkPlan", "configuration_artifact_id", openapi.Schema{"minLength": 1, "maxLength": 128})
	d.Refine("BenchmarkPlan", "id", openapi.Schema{"minLength": 1, "maxLength": workflow.MaxNameLength, "pattern": "^[^/:]+$"})
	d.Refine("BenchmarkPlan", "baseline_type", openapi.Schema{"enum": workflow.BaselineTypes})
	d.Refine("BenchmarkPlan", "baseline_types", openapi.Schema{"maxItems": workflow.MaxBaselineTypes, "items": openapi.Schema{"enum": workflow.BaselineTypes}})
	d.Refine("BenchmarkPlan", "baseline_parameters", openapi.Schema{"propertyNames": openapi.Schema{"enum": workflow.BaselineTypes}})
	d.Refine("BenchmarkPlan", "scenarios", upTo(workflow.MaxScenarios))
	d.Refine("Scenario", "id", openapi.Schema{"minLength": 1, "maxLength": workflow.MaxNameLength, "pattern": "^[^/:]+$"})
	d.Refine("ComparisonCoreParameters", "replicas", between(1, deployconfig.MaxReplicas))
	d.Refine("ComparisonCoreParameters", "tensor_parallel_size", between(1, deployconfig.MaxTensorParallel))
	d.Refine("ComparisonCoreParameters", "max_model_len", between(1, deployconfig.MaxModelLen))
	d.Refine("ComparisonCoreParameters", "max_num_seqs", between(1, deployconfig.MaxNumSeqs))
	d.Refine("ComparisonCoreParameters", "gpu_memory_utilization", openapi.Schema{"minimum": 0.1, "maximum": 1.0})
	d.Refine("ComparisonCoreParameters", "block_size", between(1, 1024))
	d.Refine("ComparisonCoreParameters", "max_num_batched_tokens", between(1, 1_000_000))
}
