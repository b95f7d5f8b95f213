package evalrun

import (
	"bytes"
	"encoding/json"
)

// Nullable is a field of a run that is absent (the zero value, left out with omitzero), an
// explicit null, or a value: the spec writes some fields as null once they are known to have
// none (error, namespace, owner_user_id).
type Nullable[T any] struct {
	v   *T
	set bool
}

// Value is a Nullable holding v.
func Value[T any](v T) Nullable[T] { return Nullable[T]{v: &v, set: true} }

// Null is an explicit null.
func Null[T any]() Nullable[T] { return Nullable[T]{set: true} }

// Get is the value (T's zero value when absent or null).
func (n Nullable[T]) Get() T {
	if n.v == nil {
		var zero T
		return zero
	}
	return *n.v
}

// Valid reports whether n holds a value (neither absent nor null).
func (n Nullable[T]) Valid() bool { return n.v != nil }

// IsZero reports whether n is absent (omitzero leaves it out).
func (n Nullable[T]) IsZero() bool { return !n.set }

// MarshalJSON writes the value, or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.v == nil {
		return []byte("null"), nil
	}
	return marshal(*n.v)
}

// UnmarshalJSON reads a value or null (either makes n present).
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*n = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = Value(v)
	return nil
}

// OptionalOf is a zero T, for the OpenAPI schema (a nullable T; runtime/openapi.Optional).
func (Nullable[T]) OptionalOf() any { var v T; return v }
