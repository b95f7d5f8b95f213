package problem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// DecodeStrict decodes one JSON value from body into v the way every API reads a body: unknown
// fields, wrong types, malformed JSON and trailing data are a 422 whose detail names the field.
func DecodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Validation(DecodeFieldError(err))
	}
	if dec.More() {
		return Validation(Field("unexpected data after the JSON value", "json_invalid", "body"))
	}
	return nil
}

// DecodeFieldError describes an encoding/json decoding error as a field error located in the body.
func DecodeFieldError(err error) FieldError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		loc := []string{"body"}
		if typeErr.Field != "" {
			loc = append(loc, strings.Split(typeErr.Field, ".")...)
		}
		if msg, ok := numberMismatch(typeErr); ok {
			return Field(msg, "value_error", loc...)
		}
		return Field(fmt.Sprintf("expected %s, got %s", jsonKindOf(typeErr.Type), articled(typeErr.Value)), "type_error", loc...)
	case errors.As(err, &syntaxErr):
		return Field(fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset), "json_invalid", "body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return Field("extra fields not permitted", "extra_forbidden", "body", name)
	}
	return Field(err.Error(), "json_invalid", "body")
}

// numberMismatch words a number a numeric field cannot hold: one past float64's range (1e400),
// an integer past its type's range, or a fraction where an integer is expected. encoding/json
// reports them all as a type error, which would read "expected a number, got a number".
func numberMismatch(typeErr *json.UnmarshalTypeError) (string, bool) {
	value, isNumber := strings.CutPrefix(typeErr.Value, "number ")
	t := typeErr.Type
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !isNumber || t == nil {
		return "", false
	}
	if len(value) > 32 {
		value = value[:32] + "..."
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("%s is out of range: a number must be within ±%g", value, maxFloat(t)), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if strings.ContainsAny(value, ".eE") {
			return fmt.Sprintf("expected an integer, got %s", value), true
		}
		return fmt.Sprintf("%s is out of range for an integer here", value), true
	}
	return "", false
}

func maxFloat(t reflect.Type) float64 {
	if t.Kind() == reflect.Float32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// jsonKindOf names what a Go type accepts in JSON terms: clients see "a number", never float64
// or a package's struct name.
func jsonKindOf(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	}
	return "a JSON value"
}

// articled turns encoding/json's name of the value it found ("number", "array", "number 1.5")
// into words ("a number", "an array").
func articled(found string) string {
	kind, _, _ := strings.Cut(found, " ")
	switch kind {
	case "array", "object":
		return "an " + kind
	case "bool":
		return "true or false"
	case "":
		return "a value"
	}
	return "a " + kind
}

// DecodeStrictFields is DecodeStrict into a fresh T that also keeps the body's raw top-level
// fields, so a stored record shows what was sent: absent stays absent, null stays null.
func DecodeStrictFields[T any](body []byte) (T, map[string]json.RawMessage, error) {
	var req T
	if err := DecodeStrict(body, &req); err != nil {
		return req, nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return req, nil, Validation(Field("the body must be a JSON object", "type_error", "body"))
	}
	return req, raw, nil
}
