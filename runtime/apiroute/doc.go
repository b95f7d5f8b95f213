// Package apiroute owns an API function's route table as one list: each entry is the OpenAPI
// operation that documents a route (method, path, scope, summary, query parameters, request and
// responses) with the handler that serves it, so the runtime's routes (fn.Route) and the
// function's OpenAPI document are both made from it, and a route cannot be served without its
// operation nor documented without being served.
//
// It is in the platform layer and may import runtime/fn, runtime/auth and runtime/openapi.
package apiroute
