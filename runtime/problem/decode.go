package problem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
		loc := append([]string{"body"}, strings.Split(typeErr.Field, ".")...)
		return Field(fmt.Sprintf("expected %s, got %s", typeErr.Type, typeErr.Value), "type_error", loc...)
	case errors.As(err, &syntaxErr):
		return Field(fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset), "json_invalid", "body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return Field("extra fields not permitted", "extra_forbidden", "body", name)
	}
	return Field(err.Error(), "json_invalid", "body")
}
