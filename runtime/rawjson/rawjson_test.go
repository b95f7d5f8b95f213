package rawjson_test

import (
	"encoding/json"
	"testing"

	"github.com/lensfn/lensfn/runtime/rawjson"
)

type record struct {
	Error rawjson.Opt[string] `json:"error,omitzero"`
	Guide rawjson.Opt[string] `json:"guide,omitzero"`
	Name  rawjson.Opt[string] `json:"name,omitzero"`
}

// The three states of a field read and write back as they were stored.
func TestOptKeepsAbsentNullAndValue(t *testing.T) {
	var r record
	if err := json.Unmarshal([]byte(`{"error":null,"name":"<a&b>"}`), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Error.Present() || r.Error.Valid() || r.Guide.Present() || !r.Guide.IsZero() || r.Name.Get() != "<a&b>" || !r.Name.Valid() {
		t.Fatalf("decoded %+v", r)
	}
	out, err := rawjson.Encode(r)
	if err != nil || string(out) != `{"error":null,"name":"<a&b>"}` {
		t.Fatalf("encoded %s %v", out, err)
	}
	r.Guide, r.Error = rawjson.Some("g"), rawjson.Null[string]()
	if out, _ := rawjson.Encode(r); string(out) != `{"error":null,"guide":"g","name":"<a&b>"}` {
		t.Fatalf("encoded %s", out)
	}
	if err := json.Unmarshal([]byte(`{"name":3}`), &r); err == nil {
		t.Fatal("a number read as a string")
	}
	if v, ok := (rawjson.Opt[int]{}).OptionalOf().(int); !ok || v != 0 {
		t.Fatal("OptionalOf is a zero value of the value's type")
	}
}
