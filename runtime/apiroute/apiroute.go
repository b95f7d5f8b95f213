package apiroute

import (
	"fmt"
	"net/http"

	"github.com/lensfn/lensfn/runtime/auth"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/openapi"
)

// Route is one entry of a function's route table for its API type A.
type Route[A any] struct {
	openapi.Op
	// Handle serves the route: a method expression of A.
	Handle func(A, http.ResponseWriter, *http.Request) error
	// MaxBody caps the request body (0: fn.DefaultMaxBodyBytes).
	MaxBody int64
}

// Document adds every route's operation to d and returns it.
func Document[A any](d *openapi.Doc, table []Route[A]) *openapi.Doc {
	for _, r := range table {
		d.Add(r.Op)
	}
	return d
}

// Serve makes the table's routes for a, with the scope and the query parameters their
// operations declare, and renders the document they make (d, with the table's operations
// added): the function serves that JSON at its document's path (Write). A route without a
// handler is an error, as is a document that does not render.
func Serve[A any](d *openapi.Doc, table []Route[A], a A) ([]fn.Route, []byte, error) {
	doc, err := Document(d, table).JSON()
	if err != nil {
		return nil, nil, err
	}
	out := make([]fn.Route, 0, len(table))
	for _, r := range table {
		handle := r.Handle
		if handle == nil {
			return nil, nil, fmt.Errorf("route %s %s has no handler", r.Method, r.Path)
		}
		out = append(out, fn.Route{Method: r.Method, Path: r.Path, Scope: auth.Scope(r.Scope), Query: r.QueryNames(), MaxBodyBytes: r.MaxBody,
			Handler: fn.Handle(func(w http.ResponseWriter, req *http.Request) error { return handle(a, w, req) })})
	}
	return out, doc, nil
}
