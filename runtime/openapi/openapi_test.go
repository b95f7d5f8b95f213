package openapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lensfn/lensfn/runtime/openapi"
)

type stamp time.Time

func (s stamp) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

// maybe is a tri-state field (absent, null or an Inner), as records declare them.
type maybe struct{ v *Inner }

func (m maybe) MarshalJSON() ([]byte, error) { return json.Marshal(m.v) }
func (m maybe) IsZero() bool                 { return m.v == nil }
func (maybe) OptionalOf() any                { return Inner{} }

type Inner struct {
	N int `json:"n"`
}

type Base struct {
	ID string `json:"id" doc:"the record's id"`
}

type Thing struct {
	Base
	Name  *string         `json:"name,omitempty"`
	Inner Inner           `json:"inner" doc:"nested"`
	List  []Inner         `json:"list"`
	Raw   json.RawMessage `json:"raw"`
	When  stamp           `json:"when"`
	Maybe maybe           `json:"maybe,omitzero" doc:"absent, null or an inner"`
	//lint:ignore U1000 an unexported field, which the schema must leave out (the test's point)
	skip int
}

func render(t *testing.T, d *openapi.Doc) map[string]any {
	t.Helper()
	raw, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	return doc
}

func TestSchemasFollowEncodingJSON(t *testing.T) {
	d := openapi.New("t", "v1", "")
	resp := d.Of(Thing{})
	req := d.Request(Thing{}, "name")
	d.Add(openapi.Op{Method: "POST", Path: "/things/{id}", Summary: "make a thing", Scope: "things:write", Request: req,
		Responses: map[int]openapi.Response{201: {Description: "made", Schema: resp}}})
	doc := render(t, d)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	thing := schemas["Thing"].(map[string]any)
	props := thing["properties"].(map[string]any)
	if got := strings.Join(toStrings(thing["required"]), ","); got != "id,inner,list,raw,when" {
		t.Errorf("required %s (embedded promoted, omitempty optional)", got)
	}
	if thing["additionalProperties"] != false || props["skip"] != nil {
		t.Errorf("thing %v", thing)
	}
	if props["id"].(map[string]any)["description"] != "the record's id" {
		t.Errorf("doc tag: %v", props["id"])
	}
	if props["name"].(map[string]any)["anyOf"] == nil {
		t.Errorf("a pointer is nullable: %v", props["name"])
	}
	if inner := props["inner"].(map[string]any); inner["description"] != "nested" || inner["allOf"] == nil {
		t.Errorf("a described reference: %v", inner)
	}
	if m := props["maybe"].(map[string]any); m["description"] != "absent, null or an inner" || len(m["anyOf"].([]any)) != 2 ||
		m["anyOf"].([]any)[0].(map[string]any)["$ref"] != "#/components/schemas/Inner" {
		t.Errorf("an Optional is its value's schema, nullable: %v", m)
	}
	if len(props["raw"].(map[string]any)) != 0 || props["when"].(map[string]any)["type"] != nil {
		t.Errorf("raw and custom-encoded values accept anything: %v %v", props["raw"], props["when"])
	}
	op := doc["paths"].(map[string]any)["/things/{id}"].(map[string]any)["post"].(map[string]any)
	body := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	if got := strings.Join(toStrings(body["required"]), ","); got != "name" {
		t.Errorf("request required %s, want only what the handler insists on", got)
	}
	if schemas["InnerInput"] == nil {
		t.Error("a type in both a request and a response gets an input component")
	}
	responses := op["responses"].(map[string]any)
	for _, status := range []string{"201", "401", "403", "415", "413", "422"} {
		if responses[status] == nil {
			t.Errorf("no %s answer", status)
		}
	}
	params := op["parameters"].([]any)
	if len(params) != 1 || params[0].(map[string]any)["name"] != "id" || op["x-lens-scope"] != "things:write" {
		t.Errorf("params %v scope %v", params, op["x-lens-scope"])
	}
	if doc["openapi"] != "3.1.0" || len(d.Operations()) != 1 || d.Operations()[0] != "POST /things/{id}" {
		t.Errorf("%v %v", doc["openapi"], d.Operations())
	}
}

func TestDuplicateOperationsAreAnError(t *testing.T) {
	d := openapi.New("t", "v1", "")
	ok := map[int]openapi.Response{200: {Description: "ok"}}
	d.Add(openapi.Op{Method: "GET", Path: "/a", Summary: "a", Responses: ok})
	if _, err := d.JSON(); err != nil {
		t.Fatal(err)
	}
	d.Add(openapi.Op{Method: "GET", Path: "/a", Summary: "a again", Responses: ok})
	if _, err := d.JSON(); err == nil || !strings.Contains(err.Error(), "added twice") {
		t.Fatalf("a duplicate operation rendered: %v", err)
	}
}

// An operation a route table leaves without its documentation does not render: the function
// then fails to build instead of serving a route its document lacks.
func TestIncompleteOperationsAreAnError(t *testing.T) {
	ok := map[int]openapi.Response{200: {Description: "ok"}}
	for name, tc := range map[string]struct {
		op   openapi.Op
		want string
	}{
		"no summary":   {openapi.Op{Method: "GET", Path: "/a", Responses: ok}, "no summary"},
		"no responses": {openapi.Op{Method: "GET", Path: "/a", Summary: "a"}, "no response"},
		"no method":    {openapi.Op{Path: "/a", Summary: "a", Responses: ok}, "method and a path"},
		"no path":      {openapi.Op{Method: "GET", Summary: "a", Responses: ok}, "method and a path"},
	} {
		d := openapi.New("t", "v1", "")
		d.Add(tc.op)
		if _, err := d.JSON(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

func TestQueryNamesAreTheRoutesQuery(t *testing.T) {
	if names := (openapi.Op{}).QueryNames(); names != nil {
		t.Errorf("no parameters: %v, want nil (the route accepts none)", names)
	}
	op := openapi.Op{Query: []openapi.Param{{Name: "offset"}, {Name: "limit"}}}
	if got := strings.Join(op.QueryNames(), ","); got != "offset,limit" {
		t.Errorf("names %s", got)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

type Limits struct {
	Name  *string `json:"name,omitempty"`
	Count int     `json:"count"`
}

func TestBoundsRefinementsAndNames(t *testing.T) {
	d := openapi.New("t", "v1", "")
	d.Name(Inner{}, "InnerRecord")
	d.Of(Inner{})
	req := d.Request(Limits{}, "count")
	d.Bound(req, "name", openapi.Schema{"maxLength": 5})
	d.Bound(req, "count", openapi.Schema{"minimum": 1})
	d.Refine("InnerRecord", "n", openapi.Schema{"enum": []int{1, 2}})
	d.Add(openapi.Op{Method: "POST", Path: "/limits", Summary: "limits", Request: req,
		Responses: map[int]openapi.Response{204: {Description: "accepted"}}})
	doc := render(t, d)
	props := req["properties"].(map[string]any)
	name := props["name"].(map[string]any)["anyOf"].([]any)[0].(map[string]any)
	if name["maxLength"] != 5 || props["count"].(map[string]any)["minimum"] != 1 {
		t.Errorf("bounds: %v", props)
	}
	inner := doc["components"].(map[string]any)["schemas"].(map[string]any)["InnerRecord"].(map[string]any)
	if n := inner["properties"].(map[string]any)["n"].(map[string]any); n["enum"] == nil {
		t.Errorf("refined %v", n)
	}
	d.Bound(req, "renamed", openapi.Schema{"maxLength": 1})
	if _, err := d.JSON(); err == nil || !strings.Contains(err.Error(), "renamed") {
		t.Errorf("a bound on a missing property: %v", err)
	}
	d2 := openapi.New("t", "v1", "")
	d2.Refine("Nothing", "x", openapi.Schema{})
	if _, err := d2.JSON(); err == nil {
		t.Error("a refinement of a missing component rendered")
	}
}
