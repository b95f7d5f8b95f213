// Package openapi owns the OpenAPI 3.1 documents the API functions serve at
// <prefix>/openapi.json: a small builder of operations whose request and response schemas are
// generated from the Go types the handlers decode and encode (JSON Schema 2020-12, as OpenAPI
// 3.1 uses it: json tags name properties, fields without omitempty are required, pointers are
// nullable, a `doc` tag is the description, named structs become components, a struct is a
// closed object), refined where the decoders' validation says more than the Go type (Bound,
// Refine: lengths, ranges, enums; a field type implementing Optional, absent, null or a value,
// is its value's type made nullable). Records (runs, workflows, cases) are generated from their
// own types, so no schema is written by hand and none can drift from its Go type; what
// tests/openapi checks is that real answers fit them.
// Envelopes (Object) are closed too. Every operation carries its scope, its
// path and query parameters and the problem+json error answers, so the document is the route
// table seen from outside. It is made from the route table: each API function's table
// (routes.go) is a list of Ops with their handlers, from which the function derives both its
// fn.Routes (method, path, scope, the query names Op.QueryNames gives) and its document (Add per
// entry), so no route is served undocumented and no operation documented unserved; Add refuses
// an operation without a method, path, summary or response, so an entry cannot skip its
// documentation either. tests/openapi checks each served document against the routes the
// function serves (scope and query parameters included) and every example of ../shared/spec
// against its schema.
//
// It imports only the standard library.
package openapi
