package rawjson

import (
	"bytes"
	"encoding/json"
)

// Opt is a field of a record's document that is absent (the zero Opt), an explicit null, or a
// value: the three states the stored JSON can hold, so a read-modify-write keeps each as it
// was. Fields that are "any JSON" are json.RawMessage instead (nil absent, `null` null).
type Opt[T any] struct {
	v       T
	present bool
	null    bool
}

// Some is an Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{v: v, present: true} }

// Null is an Opt holding an explicit null.
func Null[T any]() Opt[T] { return Opt[T]{present: true, null: true} }

// Get returns the value (the zero value when absent or null).
func (o Opt[T]) Get() T { return o.v }

// Present reports whether the field is in the document (an explicit null counts).
func (o Opt[T]) Present() bool { return o.present }

// Valid reports whether the field holds a value (neither absent nor null).
func (o Opt[T]) Valid() bool { return o.present && !o.null }

// IsZero reports an absent field (omitzero leaves it out).
func (o Opt[T]) IsZero() bool { return !o.present }

// OptionalOf gives the OpenAPI schema the value's type (runtime/openapi.Optional).
func (o Opt[T]) OptionalOf() any { var v T; return v }

// MarshalJSON writes null or the value.
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if o.null || !o.present {
		return []byte("null"), nil
	}
	return Encode(o.v)
}

// UnmarshalJSON reads null or a value.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*o = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = Some(v)
	return nil
}
