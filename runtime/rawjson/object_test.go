package rawjson_test

import (
	"encoding/json"
	"testing"

	"github.com/lensfn/lensfn/runtime/rawjson"
)

func TestObjectKeepsUnknownFieldsAndNulls(t *testing.T) {
	var o rawjson.Object
	if err := json.Unmarshal([]byte(`{"a":"x","n":null,"future":{"deep":[1,2]},"t":true}`), &o); err != nil {
		t.Fatal(err)
	}
	if o.String("a") != "x" || !o.Has("n") || o.Get("n", new(any)) || !o.Bool("t") || o.Has("absent") {
		t.Fatal("field reads")
	}
	o.Set("b", map[string]string{"<": ">"})
	o.Set("empty", json.RawMessage(nil))
	c := o.Clone()
	c.Set("a", "changed")
	out, _ := rawjson.Encode(o)
	if string(out) != `{"a":"x","b":{"<":">"},"empty":null,"future":{"deep":[1,2]},"n":null,"t":true}` {
		t.Fatalf("encoded %s", out)
	}
	if o.String("a") != "x" || c.String("a") != "changed" {
		t.Fatal("a clone shares fields")
	}
	o.Remove("b")
	if keys := o.Keys(); len(keys) != 5 || keys[0] != "a" {
		t.Fatalf("keys %v", keys)
	}
	if err := json.Unmarshal([]byte(`[1]`), &o); err == nil {
		t.Fatal("an array is not an object")
	}
}
