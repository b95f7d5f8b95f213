// Package openapi_test checks the OpenAPI 3.1 documents the API functions serve
// (/api/simulation/openapi.json, /api/v1/evaluate/openapi.json, /api/cluster/openapi.json for
// inventory-api): each is served without a token; every route a function serves is an operation
// of its document, with the route's scope and the query parameters the runtime accepts, and every
// documented operation is routed (each function makes both from one route table);
// every schema compiles as JSON Schema 2020-12; every JSON example of ../shared/spec validates
// against the schema of the request or response it shows; and the functions' real answers
// (lists, creates, reads, cancels, problems; for evaluation-api also a workflow-run and an
// evaluation created through the API, their GET, list and details answers, a case, a case
// cancel, a rebuilt comparison report, and a benchmark run a runner took to the end against a
// fake endpoint, with its metrics, results, SLA verdict and artifacts) validate against the schemas their documents give.
// The schemas are generated from Go types (runtime/openapi), so a field added to a Go type is
// in its schema by construction; schemas are closed (additionalProperties false), so a field a
// record answers from its Extra (fields its Go type does not declare: evalrun.Run,
// workflow.Workflow, workflow.Case), fails the live answers, and drift_test.go fails when a POST /runs request field, which a run
// stores as sent, is missing from BenchmarkRunResponse.
//
// Like everything under tests/, it may import anything in the module.
package openapi_test
