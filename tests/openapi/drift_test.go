package openapi_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/functions/evaluationapi"
	"github.com/lensfn/lensfn/runtime/openapi"
)

// jsonFields lists the JSON names encoding/json gives t's fields (embedded structs promoted).
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// componentProperties renders the evaluation API's document and returns a component's
// property names.
func componentProperties(t *testing.T, d *openapi.Doc, component string) []string {
	t.Helper()
	raw, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s, ok := doc["components"].(map[string]any)["schemas"].(map[string]any)[component].(map[string]any)
	if !ok {
		t.Fatalf("no component %s", component)
	}
	var out []string
	for name := range s["properties"].(map[string]any) {
		out = append(out, name)
	}
	return out
}

// TestARunDocumentsEveryRequestFieldItStores: BuildRun copies a POST /runs body's fields into
// the run as sent (all but api_key, which is sealed apart), so a field added to
// events.EvaluateRunRequest must be added to evalrun.Run (else the run keeps it in Extra), or
// answers carrying it would not fit BenchmarkRunResponse.
func TestARunDocumentsEveryRequestFieldItStores(t *testing.T) {
	props := componentProperties(t, evaluationapi.Document(), "BenchmarkRunResponse")
	for _, name := range jsonFields(reflect.TypeFor[events.EvaluateRunRequest]()) {
		stored := name != "api_key"
		if documented := slices.Contains(props, name); documented != stored {
			t.Errorf("request field %s: stored in the run %v, documented in BenchmarkRunResponse %v", name, stored, documented)
		}
	}
}
