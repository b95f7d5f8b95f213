// Package openapi owns the OpenAPI 3.1 documents the API functions serve at
// <prefix>/openapi.json: a small builder of operations whose request and response schemas are
// generated from the Go types the handlers decode and encode (JSON Schema 2020-12, as OpenAPI
// 3.1 uses it: json tags name properties, fields without omitempty are required, pointers are
// nullable, a `doc` tag is the description, named structs become components), or written out
// where a handler answers a record kept as raw JSON. Every operation carries its scope, its
// path and query parameters and the problem+json error answers, so the document is the route
// table seen from outside; tests/openapi checks each document against its function's routes and
// every example of ../shared/spec against its schema.
//
// It imports only the standard library.
package openapi
