// Package openapi_test checks the OpenAPI 3.1 documents the API functions serve
// (/api/simulation/openapi.json, /api/v1/evaluate/openapi.json, /api/cluster/openapi.json for
// inventory-api): each is served without a token; every route of a function's route table is in
// its document and every documented operation is routed;
// every schema compiles as JSON Schema 2020-12; every JSON example of ../shared/spec validates
// against the schema of the request or response it shows; and the functions' real answers
// (lists, creates, reads, cancels, problems) validate against the schemas their documents give.
//
// Like everything under tests/, it may import anything in the module.
package openapi_test
