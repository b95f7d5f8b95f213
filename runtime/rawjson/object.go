package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Object is a JSON object as raw fields. The zero value is not usable: start from New,
// FromMap or UnmarshalJSON.
type Object struct{ fields map[string]json.RawMessage }

// New returns an empty object.
func New() Object { return Object{fields: map[string]json.RawMessage{}} }

// FromMap wraps fields (the object owns the map from then on).
func FromMap(fields map[string]json.RawMessage) Object {
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	return Object{fields: fields}
}

// Map returns a copy of the fields' map (the raw values are shared, never to be modified).
func (o Object) Map() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(o.fields))
	for k, v := range o.fields {
		out[k] = v
	}
	return out
}

// String returns a string field ("" when absent, null or not a string).
func (o *Object) String(key string) string {
	var s string
	_ = json.Unmarshal(o.fields[key], &s)
	return s
}

// Bool returns a boolean field (false when absent or not a boolean).
func (o *Object) Bool(key string) bool {
	var b bool
	_ = json.Unmarshal(o.fields[key], &b)
	return b
}

// Has reports whether the object holds key (an explicit null counts).
func (o *Object) Has(key string) bool {
	_, ok := o.fields[key]
	return ok
}

// Raw returns the raw JSON of a field (nil when absent).
func (o *Object) Raw(key string) json.RawMessage { return o.fields[key] }

// Get decodes a field into v; false when the field is absent, null or of another shape.
func (o *Object) Get(key string, v any) bool {
	raw, ok := o.fields[key]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Set stores v (encoded) under key; nil stores an explicit null and a json.RawMessage is kept
// as given (an empty one is a null).
func (o *Object) Set(key string, v any) {
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		o.fields[key] = append(json.RawMessage(nil), raw...)
		return
	}
	raw, err := Encode(v)
	if err != nil {
		panic(fmt.Sprintf("rawjson: field %s cannot be encoded: %v", key, err)) // the records' own values only
	}
	o.fields[key] = raw
}

// Remove deletes a field.
func (o *Object) Remove(key string) { delete(o.fields, key) }

// Keys lists the fields, sorted.
func (o *Object) Keys() []string {
	keys := make([]string, 0, len(o.fields))
	for k := range o.fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Clone returns a deep copy.
func (o Object) Clone() Object {
	c := Object{fields: make(map[string]json.RawMessage, len(o.fields))}
	for k, v := range o.fields {
		c.fields[k] = append(json.RawMessage(nil), v...)
	}
	return c
}

// MarshalJSON encodes the object.
func (o Object) MarshalJSON() ([]byte, error) { return Encode(o.fields) }

// UnmarshalJSON decodes a JSON object (anything else is an error).
func (o *Object) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return fmt.Errorf("rawjson: not a JSON object")
	}
	o.fields = fields
	return nil
}

// Encode is json.Marshal without HTML escaping, as the records are stored and served.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
