package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/functions/inventoryapi"
	"github.com/lensfn/lensfn/functions/simulationapi"
	"github.com/lensfn/lensfn/runtime/fn"
	"github.com/lensfn/lensfn/runtime/fn/fntest"
	"github.com/lensfn/lensfn/runtime/openapi"
	"github.com/lensfn/lensfn/runtime/secret"
)

// api is one function that serves a document.
type api struct {
	name, docPath string
	build         fn.Builder
	document      func() *openapi.Doc
	// spec is the spec file whose examples belong to this document.
	spec string
}

var apis = []api{
	{name: simulationapi.Name, docPath: simulationapi.OpenAPIPath, build: buildSimulation, document: simulationapi.Document, spec: "simulation-api.zh.txt"},
	{name: evaluationapi.Name, docPath: evaluationapi.OpenAPIPath, build: evaluationapi.Build, document: evaluationapi.Document, spec: "evaluation-api.txt"},
	{name: inventoryapi.Name, docPath: inventoryapi.OpenAPIPath, build: inventoryapi.Build, document: inventoryapi.Document},
}

// buildSimulation builds simulation-api without its trace parser modules (the WASM modules are
// built by make; the routes and the document do not depend on them).
func buildSimulation(_ context.Context, d fn.Deps) (*fn.Function, error) {
	f, _, err := simulationapi.New(d, noParsers{})
	return f, err
}

type noParsers struct{}

func (noParsers) Formats() []simulationapi.TraceFormat { return nil }
func (noParsers) Arrivals(context.Context, string, string, func(float64)) error {
	return nil
}

// started is a function built as the runtime builds it, with its route table.
type started struct {
	url    string
	routes []fn.Route
	server *fn.Server
	deps   fn.Deps
	key    string // LENS_SECRET_KEY
}

// staticExecution gives evaluation-api a target, so runs can be created.
const staticExecution = `[{"id":"exec-1","cluster_session_id":"session-1","name":"sim","model":"fake-model","endpoint":"http://127.0.0.1:1/v1","namespace":"local"}]`

func start(t *testing.T, a api) started {
	t.Helper()
	return startWith(t, a, staticExecution)
}

// startWith starts a function whose static deployment executions are executions (JSON).
func startWith(t *testing.T, a api, executions string) started {
	t.Helper()
	key := secret.NewKey()
	env := fntest.Env(t, map[string]string{"LENS_SECRET_KEY": key, "LENS_STATIC_EXECUTIONS": executions})
	var f *fn.Function
	var deps fn.Deps
	s, err := fn.NewServer(context.Background(), fntest.Config(t, env), a.name, func(ctx context.Context, d fn.Deps) (*fn.Function, error) {
		var err error
		deps = d
		f, err = a.build(ctx, d)
		return f, err
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(func() { srv.Close(); _ = s.Close(context.Background()) })
	return started{url: srv.URL, routes: f.Routes, server: s, deps: deps, key: key}
}

// normal names every path parameter alike, so /runs/{id} and /runs/{run_id} are one route.
var param = regexp.MustCompile(`\{[^}]*\}`)

func normal(op string) string { return param.ReplaceAllString(op, "{}") }

// Each function makes its routes and its document from one route table; this checks the
// outcome from outside: every route the running function serves is an operation of the
// document it serves, with the route's scope and exactly the query parameters the runtime lets
// through, and every documented operation is routed.
func TestEveryRouteIsDocumentedAndEveryOperationRouted(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			doc, _, s := servedBy(t, a)
			paths := doc["paths"].(map[string]any)
			routed := map[string]bool{}
			for _, r := range s.routes {
				routed[normal(r.Method+" "+r.Path)] = true
				item, _ := paths[r.Path].(map[string]any)
				op, ok := item[strings.ToLower(r.Method)].(map[string]any)
				if !ok {
					t.Errorf("%s %s is routed but missing from %s", r.Method, r.Path, a.docPath)
					continue
				}
				if scope, _ := op["x-lens-scope"].(string); scope != string(r.Scope) {
					t.Errorf("%s %s: routed with scope %q, documented with %q", r.Method, r.Path, r.Scope, scope)
				}
				if got, want := queryParams(op), strings.Join(r.Query, ","); got != want {
					t.Errorf("%s %s: the runtime accepts query parameters [%s], the document lists [%s]", r.Method, r.Path, want, got)
				}
			}
			documented := map[string]bool{}
			for _, op := range a.document().Operations() {
				documented[normal(op)] = true
			}
			if len(documented) != len(routed) {
				t.Errorf("%d operations documented, %d routes", len(documented), len(routed))
			}
			for op := range documented {
				if !routed[op] {
					t.Errorf("%s is documented but not routed", op)
				}
			}
		})
	}
}

// queryParams lists an operation's query parameters' names, in order.
func queryParams(op map[string]any) string {
	params, _ := op["parameters"].([]any)
	var names []string
	for _, p := range params {
		if m := p.(map[string]any); m["in"] == "query" {
			names = append(names, m["name"].(string))
		}
	}
	return strings.Join(names, ",")
}

// served fetches a function's document without a token and compiles it.
func served(t *testing.T, a api) (map[string]any, *jsonschema.Compiler) {
	t.Helper()
	doc, c, _ := servedBy(t, a)
	return doc, c
}

func servedBy(t *testing.T, a api) (map[string]any, *jsonschema.Compiler, started) {
	t.Helper()
	s := start(t, a)
	doc, c := fetchDocument(t, s, a)
	return doc, c, s
}

// fetchDocument fetches a started function's document without a token and compiles it.
func fetchDocument(t *testing.T, s started, a api) (map[string]any, *jsonschema.Compiler) {
	t.Helper()
	resp, err := http.Get(s.url + a.docPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s without a token: %d %s", a.docPath, resp.StatusCode, raw)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi %v", doc["openapi"])
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, res); err != nil {
		t.Fatal(err)
	}
	return doc, c
}

const docURL = "mem:///openapi.json"

func pointer(parts ...string) string {
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
	}
	return docURL + "#/" + strings.Join(parts, "/")
}

func TestDocumentsAreServedPubliclyAndEverySchemaCompiles(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			doc, c := served(t, a)
			schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
			for name := range schemas {
				if _, err := c.Compile(pointer("components", "schemas", name)); err != nil {
					t.Errorf("component %s: %v", name, err)
				}
			}
			for path, item := range doc["paths"].(map[string]any) {
				for method, op := range item.(map[string]any) {
					o := op.(map[string]any)
					for _, m := range param.FindAllString(path, -1) {
						if !hasParam(o, strings.Trim(m, "{}")) {
							t.Errorf("%s %s does not declare path parameter %s", method, path, m)
						}
					}
					if len(o["responses"].(map[string]any)) == 0 {
						t.Errorf("%s %s has no responses", method, path)
					}
					if _, ok := o["requestBody"]; ok {
						if _, err := c.Compile(pointer("paths", path, method, "requestBody", "content", "application/json", "schema")); err != nil {
							t.Errorf("%s %s request: %v", method, path, err)
						}
					}
				}
			}
		})
	}
}

func hasParam(op map[string]any, name string) bool {
	params, _ := op["parameters"].([]any)
	return slices.ContainsFunc(params, func(p any) bool {
		m := p.(map[string]any)
		return m["name"] == name && m["in"] == "path"
	})
}

// specDir is ../shared/spec beside the repository (LENS_SHARED_DIR overrides ../shared).
func specDir(t *testing.T) string {
	shared := os.Getenv("LENS_SHARED_DIR")
	if shared == "" {
		shared = filepath.Join("..", "..", "..", "shared")
	}
	dir := filepath.Join(shared, "spec")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the spec is not beside the repository (%v); set LENS_SHARED_DIR", err)
	}
	return dir
}

// example is one JSON block of a spec file, numbered in order.
type example struct {
	line  int
	value any
	raw   string
}

// examples extracts every JSON object that starts a line of a spec file.
func examples(t *testing.T, file string) []example {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var out []example
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "{") {
			continue
		}
		for j := i; j < len(lines) && j < i+500; j++ {
			block := strings.Join(lines[i:j+1], "\n")
			var v any
			if json.Unmarshal([]byte(block), &v) == nil {
				out = append(out, example{line: i + 1, value: v, raw: block})
				i = j
				break
			}
		}
	}
	return out
}
