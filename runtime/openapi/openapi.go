package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Version is the OpenAPI version of every document.
const Version = "3.1.0"

// Schema is a JSON Schema (2020-12) object.
type Schema = map[string]any

// Doc is one API function's document under construction.
type Doc struct {
	title, version, description string
	paths                       map[string]map[string]any
	schemas                     map[string]Schema
	reflected                   map[string]string // Go type -> component name
	names                       map[string]string // Go type -> the component name Name gave it
	errs                        []error
}

// New starts a document.
func New(title, version, description string) *Doc {
	d := &Doc{title: title, version: version, description: description, paths: map[string]map[string]any{},
		schemas: map[string]Schema{}, reflected: map[string]string{}, names: map[string]string{}}
	d.schemas["Problem"] = problemSchema
	return d
}

// problemSchema is RFC 9457's problem details as every API answers errors.
var problemSchema = Schema{"type": "object", "required": []string{"type", "title", "status"},
	"properties": map[string]any{
		"type": Schema{"type": "string"}, "title": Schema{"type": "string"}, "status": Schema{"type": "integer"},
		"detail": Schema{"type": "string"}, "code": Schema{"type": "string"}, "requestId": Schema{"type": "string"},
		"errors": Schema{"type": "array", "description": "the fields that failed validation, when there were several"},
	}}

// Op is one operation.
type Op struct {
	Method, Path, Summary, Description string
	// Scope is the token scope the route requires ("" = public).
	Scope string
	// Query lists the query parameters the route accepts, with their descriptions.
	Query []Param
	// Request is the JSON body's schema (nil: no body); OptionalBody when an empty body is
	// accepted as {}.
	Request      Schema
	OptionalBody bool
	// Responses by status; Problem answers are added for the statuses in Errors.
	Responses map[int]Response
	// Errors are the problem+json statuses this operation answers besides the common ones.
	Errors []int
}

// Param is a query parameter.
type Param struct {
	Name, Description string
	Schema            Schema
}

// Response is one answer: a JSON body (Schema), another media type (Media with Schema or none),
// or no body.
type Response struct {
	Description string
	Schema      Schema
	Media       string // default application/json when Schema is set
	Headers     map[string]string
}

var pathParam = regexp.MustCompile(`\{([a-zA-Z_]+)\}`)

// QueryNames lists the names of the operation's query parameters (nil when it has none), the
// list a route table gives the runtime as the query parameters the route accepts.
func (op Op) QueryNames() []string {
	var names []string
	for _, q := range op.Query {
		names = append(names, q.Name)
	}
	return names
}

// Add puts an operation into the document. An operation without a method, path, summary or
// response is an error (JSON reports it): a route table that documents its routes by
// construction cannot leave one undocumented.
func (d *Doc) Add(op Op) {
	switch {
	case op.Method == "" || !strings.HasPrefix(op.Path, "/"):
		d.errs = append(d.errs, fmt.Errorf("openapi: operation %q %q needs a method and a path", op.Method, op.Path))
	case op.Summary == "":
		d.errs = append(d.errs, fmt.Errorf("openapi: %s %s has no summary", op.Method, op.Path))
	case len(op.Responses) == 0:
		d.errs = append(d.errs, fmt.Errorf("openapi: %s %s documents no response", op.Method, op.Path))
	}
	item := d.paths[op.Path]
	if item == nil {
		item = map[string]any{}
		d.paths[op.Path] = item
	}
	method := strings.ToLower(op.Method)
	if _, dup := item[method]; dup {
		d.errs = append(d.errs, fmt.Errorf("openapi: %s %s added twice", op.Method, op.Path))
	}
	o := map[string]any{"summary": op.Summary, "operationId": operationID(op.Method, op.Path)}
	if op.Description != "" {
		o["description"] = op.Description
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": Schema{"type": "string"}})
	}
	for _, q := range op.Query {
		s := q.Schema
		if s == nil {
			s = Schema{"type": "string"}
		}
		params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": s})
	}
	if params != nil {
		o["parameters"] = params
	}
	if op.Request != nil {
		o["requestBody"] = map[string]any{"required": !op.OptionalBody, "content": map[string]any{"application/json": map[string]any{"schema": op.Request}}}
	}
	responses := map[string]any{}
	for status, r := range op.Responses {
		resp := map[string]any{"description": r.Description}
		if r.Schema != nil || r.Media != "" {
			media := r.Media
			if media == "" {
				media = "application/json"
			}
			content := map[string]any{}
			if r.Schema != nil {
				content["schema"] = r.Schema
			}
			resp["content"] = map[string]any{media: content}
		}
		if len(r.Headers) > 0 {
			h := map[string]any{}
			for name, desc := range r.Headers {
				h[name] = map[string]any{"description": desc, "schema": Schema{"type": "string"}}
			}
			resp["headers"] = h
		}
		responses[strconv.Itoa(status)] = resp
	}
	errs := append([]int{}, op.Errors...)
	if op.Scope != "" {
		errs = append(errs, http.StatusUnauthorized, http.StatusForbidden)
		o["security"] = []any{map[string]any{"bearer": []string{op.Scope}}}
		o["x-lens-scope"] = op.Scope
	} else {
		o["security"] = []any{}
	}
	if op.Request != nil {
		errs = append(errs, http.StatusUnsupportedMediaType, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity)
	} else if len(op.Query) > 0 {
		errs = append(errs, http.StatusUnprocessableEntity)
	}
	for _, status := range errs {
		if _, set := responses[strconv.Itoa(status)]; !set {
			responses[strconv.Itoa(status)] = map[string]any{"description": http.StatusText(status),
				"content": map[string]any{"application/problem+json": map[string]any{"schema": Ref("Problem")}}}
		}
	}
	o["responses"] = responses
	item[method] = o
}

// operationID names an operation after its method and path: GET /runs/{id} -> get_runs_id.
func operationID(method, path string) string {
	var parts []string
	for _, seg := range strings.Split(path, "/") {
		seg = strings.Trim(seg, "{}")
		if seg == "" || seg == "api" || seg == "v1" {
			continue
		}
		parts = append(parts, strings.ReplaceAll(seg, "-", "_"))
	}
	return strings.ToLower(method) + "_" + strings.Join(parts, "_")
}

// Ref points at a component schema.
func Ref(name string) Schema { return Schema{"$ref": "#/components/schemas/" + name} }

// Component registers a hand-written schema and returns a reference to it.
func (d *Doc) Component(name string, s Schema) Schema {
	if _, dup := d.schemas[name]; dup {
		d.errs = append(d.errs, fmt.Errorf("openapi: component %s defined twice", name))
	}
	d.schemas[name] = s
	return Ref(name)
}

// Operations lists the document's operations as "METHOD path", sorted.
func (d *Doc) Operations() []string {
	var out []string
	for path, item := range d.paths {
		for method := range item {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// JSON renders the document, or the first error met while building it.
func (d *Doc) JSON() ([]byte, error) {
	if len(d.errs) > 0 {
		return nil, d.errs[0]
	}
	doc := map[string]any{
		"openapi":           Version,
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info":              map[string]any{"title": d.title, "version": d.version, "description": d.description},
		"paths":             d.paths,
		"components": map[string]any{"schemas": d.schemas, "securitySchemes": map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer",
				"description": "a Lensfn API token; each operation names the scope it needs (x-lens-scope). The local stack runs without tokens on loopback."}}},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// Handler serves the rendered document.
func Handler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { Write(w, doc) })
}

// Write answers a request for the document with the rendered doc.
func Write(w http.ResponseWriter, doc []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(doc)
}
