package apiroute_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/apiroute"
	"github.com/lensfn/lensfn/runtime/openapi"
)

type api struct{ name string }

func (a *api) hello(w http.ResponseWriter, _ *http.Request) error {
	_, err := w.Write([]byte("hello from " + a.name))
	return err
}

func table() []apiroute.Route[*api] {
	ok := map[int]openapi.Response{http.StatusOK: {Description: "a greeting", Schema: openapi.Schema{"type": "string"}}}
	return []apiroute.Route[*api]{
		{Op: openapi.Op{Method: "GET", Path: "/hello", Summary: "Greets", Scope: "greet:read", Responses: ok,
			Query: []openapi.Param{{Name: "lang", Schema: openapi.Schema{"type": "string"}}}}, Handle: (*api).hello, MaxBody: 1024},
		{Op: openapi.Op{Method: "POST", Path: "/hello", Summary: "Greets back", Scope: "greet:write", Responses: ok}, Handle: (*api).hello},
	}
}

// The routes and the document come from one table: each route carries its operation's scope and
// query parameters and serves through its method of the API; the document has every operation.
func TestServeMakesRoutesAndTheDocumentFromOneTable(t *testing.T) {
	routes, doc, err := apiroute.Serve(openapi.New("greeter", "v1", "test"), table(), &api{name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 2 || routes[0].Scope != "greet:read" || len(routes[0].Query) != 1 || routes[0].Query[0] != "lang" ||
		routes[0].MaxBodyBytes != 1024 || routes[1].Method != "POST" {
		t.Fatalf("routes %+v", routes)
	}
	rec := httptest.NewRecorder()
	routes[0].Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/hello", nil))
	if rec.Body.String() != "hello from a" {
		t.Fatalf("the route served %q", rec.Body.String())
	}
	for _, want := range []string{`"/hello"`, `"get"`, `"post"`, `"Greets back"`, `"lang"`} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the document lacks %s: %s", want, doc)
		}
	}
	missing := table()
	missing[1].Handle = nil
	if _, _, err := apiroute.Serve(openapi.New("greeter", "v1", "test"), missing, &api{}); err == nil || !strings.Contains(err.Error(), "POST /hello has no handler") {
		t.Fatalf("a route without a handler: %v", err)
	}
}
